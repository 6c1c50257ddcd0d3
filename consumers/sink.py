"""The sink: every topic lands in ClickHouse, in batches by size and time.

At-least-once from Kafka, exactly-once in the tables: offsets are committed only after a
batch is stored, so a crash replays the uncommitted tail. Every row keeps its Kafka
coordinates (_topic, _partition, _offset), and one INSERT per table and batch is atomic,
so the store itself knows how far each partition got: a replayed event at or below that
offset is dropped before the insert, and each event is stored once (plain counts equal
FINAL counts). The tables are also ReplacingMergeTree keyed by event id, a second guard.
Poison records are dead-lettered by the consumer and reach the `dead_letters` table
through the `deadletter` topic.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from pydantic import BaseModel, Field

from consumers.store import open_store, table_for_topic
from infra.kafka_io import ConsumedEvent, EventConsumer

log = logging.getLogger(__name__)

ALL_TOPICS = ["tasks", "rollouts", "feedback", "policy", "metrics", "deadletter", r"^advantages\..*"]


class SinkConfig(BaseModel):
    topics: list[str] = Field(default_factory=lambda: list(ALL_TOPICS),
                              description="topics to store; a name starting with ^ is a regex")
    group_id: str = Field("reshaper-sink", description="consumer group; its commits mark what is stored")
    batch_rows: int = Field(5_000, gt=0, description="flush when this many rows are buffered")
    batch_seconds: float = Field(2.0, gt=0, description="or when the oldest buffered row is this old")
    store: str | None = Field(None, description="chDB path or ClickHouse server URL; default: the embedded chDB")


@dataclass
class SinkStats:
    rows: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    batches: int = 0
    dead_lettered: int = 0

    def total(self) -> int:
        return sum(self.rows.values())


def event_row(event: ConsumedEvent) -> dict:
    return {**event.record, "_topic": event.topic, "_partition": event.partition, "_offset": event.offset}


class Sink:
    def __init__(self, cfg: SinkConfig | None = None, bootstrap: str | None = None, store=None):
        self.cfg = cfg or SinkConfig()
        self.store = store or open_store(self.cfg.store)
        self.store.init_schema()
        # a short metadata refresh so new advantages.<config_id> topics are picked up soon
        self.consumer = EventConsumer(self.cfg.topics, self.cfg.group_id, bootstrap,
                                      **{"topic.metadata.refresh.interval.ms": 3000})
        self.stats = SinkStats()
        self._buffer: list[ConsumedEvent] = []
        self._oldest: float | None = None
        self._stored: dict[tuple[str, int], int] = {}  # (topic, partition) -> highest stored offset
        self._positions_read: set[str] = set()  # topics whose stored offsets were read from the store

    def flush(self) -> int:
        """Store the buffered events table by table, then commit their offsets."""
        if not self._buffer:
            return 0
        by_table: dict[str, list[dict]] = defaultdict(list)
        for event in self.unstored(self._buffer):
            by_table[table_for_topic(event.topic)].append(event_row(event))
        for table, rows in by_table.items():
            self.store.insert(table, rows)
            self.stats.rows[table] += len(rows)
            for row in rows:
                key = (row["_topic"], row["_partition"])
                self._stored[key] = max(self._stored.get(key, -1), row["_offset"])
        self.consumer.commit(self._buffer)
        n = len(self._buffer)
        self.stats.batches += 1
        self._buffer, self._oldest = [], None
        return n

    def unstored(self, events: list[ConsumedEvent]) -> list[ConsumedEvent]:
        """The events past the highest offset the store holds for their partition."""
        for topic in {e.topic for e in events} - self._positions_read:
            table = table_for_topic(topic)
            found = self.store.query(f"SELECT _partition, max(_offset) FROM {table} WHERE _topic = {{t:String}} "
                                     "GROUP BY _partition", {"t": topic}).rows
            for partition, offset in found:
                key = (topic, int(partition))
                self._stored[key] = max(self._stored.get(key, -1), int(offset))
            self._positions_read.add(topic)
        fresh = [e for e in events if e.offset > self._stored.get((e.topic, e.partition), -1)]
        if len(fresh) < len(events):
            log.info("skipped %d events already in the store (replayed after a restart)", len(events) - len(fresh))
        return fresh

    def poll_once(self, timeout_s: float = 0.5) -> int:
        events = self.consumer.poll_batch(max(self.cfg.batch_rows - len(self._buffer), 1), timeout_s)
        if events and self._oldest is None:
            self._oldest = time.monotonic()
        self._buffer.extend(events)
        self.stats.dead_lettered = self.consumer.dead_lettered
        due = len(self._buffer) >= self.cfg.batch_rows or (
            self._oldest is not None and time.monotonic() - self._oldest >= self.cfg.batch_seconds)
        if due or (not events and self._buffer):
            self.flush()
        elif not events:
            self.consumer.commit([])  # dead letters seen in an otherwise empty poll
        return len(events)

    def run(self, should_stop: Callable[[], bool] = lambda: False, idle_exit_s: float | None = None) -> SinkStats:
        """Consume until `should_stop()` or, with `idle_exit_s`, until nothing arrived for that long."""
        last_event = time.monotonic()
        try:
            while not should_stop():
                # the idle clock runs only once partitions are assigned: after a crash the
                # group waits for the dead member's session to expire before rebalancing
                if self.poll_once() or not self.consumer.raw.assignment():
                    last_event = time.monotonic()
                elif idle_exit_s is not None and time.monotonic() - last_event > idle_exit_s:
                    break
            self.flush()
        finally:
            self.consumer.close()
        return self.stats

    def close(self) -> None:
        self.store.close()
