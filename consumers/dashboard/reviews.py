"""Publishing verdicts: a Review event on the run's ``reviews`` topic, then into the store.

The topic is the record of every verdict (what a replay or the feedback agent reads); the
sink stores it like every topic. When the dashboard itself holds the store (a finished
run, or a server), no sink may be running, so it also writes the row at once: the sink
storing the same event later is harmless, since the reviews table collapses rows of one
event id (ReplacingMergeTree; every query reads it with FINAL).
"""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient

from consumers.dashboard.source import QuerySource
from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics, ensure_topics


class ReviewPublisher:
    def __init__(self, bootstrap: str, topics: Topics, source: QuerySource, timeout_s: float = 15.0):
        self.topics = topics
        self.source = source
        self.timeout_s = timeout_s
        # the reviews topic is created here when missing (a run started before it existed has
        # none); one that exists is left as the run made it, whatever its partition count
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        if topics.reviews not in admin.list_topics(timeout=timeout_s).topics:
            ensure_topics(admin, [next(s for s in topics.event_specs() if s.name == topics.reviews)])
        self._producer = EventProducer(bootstrap, **{"delivery.timeout.ms": int(timeout_s * 1000)})

    def publish(self, record: dict[str, Any]) -> dict[str, Any]:
        """Send one Review and wait for the broker to have it; store it when the store is ours."""
        sent = self._producer.send(self.topics.reviews, record["rollout_id"], "Review", record)
        self._producer.flush(self.timeout_s)
        if self.source.holds_store:
            self.source.insert("reviews", [{**sent, "_topic": self.topics.reviews}])
        return sent
