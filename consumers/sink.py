"""The sink: every topic lands in ClickHouse, in batches by size and time.

At-least-once from Kafka, exactly-once in the tables: offsets are committed only after a
batch is stored, so a crash replays the uncommitted tail. Every row keeps its Kafka
coordinates (_topic, _partition, _offset), and one INSERT per table and batch is atomic,
so the store itself knows how far each partition got: a replayed event at or below that
offset is dropped before the insert, and each event is stored once (plain counts equal
FINAL counts). The tables are also ReplacingMergeTree keyed by event id, a second guard.
Poison records are dead-lettered by the consumer and reach the `dead_letters` table
through the `deadletter` topic.

Values are not decoded here: the bodies of a batch written with a table's current schema
go to ClickHouse as one Avro container file, and ClickHouse decodes them into the columns
(``consumers/store/container.py``). Values of an older writer schema are decoded (and so
resolved to the current one) in Python. A file ClickHouse cannot read writes nothing; then
its records are decoded one by one, the ones that do not decode are dead-lettered and
the rest stored.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from pydantic import BaseModel, Field

from consumers.store import QueryError, open_store, table_for_topic
from consumers.store.container import ContainerFormat
from infra.platform.kafka_io import EventConsumer, FramedEvent
from infra.platform.topics import Topics
from schemas.codec import CODEC, DecodeError

log = logging.getLogger(__name__)

class SinkConfig(BaseModel):
    topics: Topics = Field(default_factory=Topics, description="the topic namespace it stores")
    only: list[str] | None = Field(None, description="store just these topics of the namespace; "
                                   "default: every one, new advantage streams included")
    group_id: str = Field("reshaper-sink", description="consumer group; its commits mark what is stored")
    batch_rows: int = Field(5_000, gt=0, description="flush when this many rows are buffered")
    batch_seconds: float = Field(2.0, gt=0, description="or when the oldest buffered row is this old")
    store: str | None = Field(None, description="chDB path or ClickHouse server URL; default: the embedded chDB")


@dataclass
class SinkStats:
    rows: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    batches: int = 0
    dead_lettered: int = 0
    decoded_here: int = 0  # rows decoded in Python: an older writer schema, or a file ClickHouse refused

    def total(self) -> int:
        return sum(self.rows.values())


def event_row(event: FramedEvent, record: dict) -> dict:
    return {**record, "_topic": event.topic, "_partition": event.partition, "_offset": event.offset}


class Sink:
    def __init__(self, cfg: SinkConfig | None = None, bootstrap: str | None = None, store=None):
        self.cfg = cfg or SinkConfig()
        self.store = store or open_store(self.cfg.store)
        self.store.init_schema()
        # a short metadata refresh so new advantages.<config_id> topics are picked up soon
        self.consumer = EventConsumer(self.cfg.only or self.cfg.topics.subscription, self.cfg.group_id, bootstrap,
                                      dead_letter_topic=self.cfg.topics.deadletter,
                                      **{"topic.metadata.refresh.interval.ms": 3000})
        self.stats = SinkStats()
        self._buffer: list[FramedEvent] = []
        self._oldest: float | None = None
        self._stored: dict[tuple[str, int], int] = {}  # (topic, partition) -> highest stored offset
        self._positions_read: set[str] = set()  # topics whose stored offsets were read from the store
        self._formats: dict[bytes, ContainerFormat] = {}  # writer fingerprint -> its container header

    def flush(self) -> int:
        """Store the buffered events table by table, then commit their offsets."""
        if not self._buffer:
            return 0
        files: dict[tuple[str, str, bytes], list[FramedEvent]] = defaultdict(list)
        older: dict[str, list[FramedEvent]] = defaultdict(list)
        for event in self.unstored(self._buffer):
            table = table_for_topic(event.topic, self.cfg.topics)
            if event.current:
                files[(table, event.topic, event.fingerprint)].append(event)
            else:
                older[table].append(event)
        for (table, topic, fp), events in files.items():
            fmt = self._formats.get(fp) or self._formats.setdefault(fp, ContainerFormat.of(CODEC.writer_schema(fp)))
            data = fmt.file(topic, ((e.partition, e.offset, e.body) for e in events))
            try:
                self.store.insert_container(table, fmt.columns, data)
            except QueryError as exc:
                log.warning("%s: ClickHouse could not read a file of %d records (%s); decoding them here",
                            table, len(events), str(exc).splitlines()[0][:300])
                older[table].extend(events)
                continue
            self._stored_events(table, events)
        for table, events in older.items():
            self._insert_decoded(table, events)
        self.consumer.commit(self._buffer)
        n = len(self._buffer)
        self.stats.batches += 1
        self.stats.dead_lettered = self.consumer.dead_lettered
        self._buffer, self._oldest = [], None
        return n

    def _insert_decoded(self, table: str, events: list[FramedEvent]) -> None:
        """Decode in Python (resolving older writer schemas), dead-letter what does not decode."""
        kept, rows = [], []
        for event in events:
            try:
                record = CODEC.decode(event.value, event.payload)
            except DecodeError as exc:
                self.consumer.dead_letter(event, exc)
                continue
            kept.append(event)
            rows.append(event_row(event, record))
        if rows:
            self.store.insert(table, rows)
            self.stats.decoded_here += len(rows)
        self._stored_events(table, kept)

    def _stored_events(self, table: str, events: list[FramedEvent]) -> None:
        self.stats.rows[table] += len(events)
        for event in events:
            key = (event.topic, event.partition)
            self._stored[key] = max(self._stored.get(key, -1), event.offset)

    def unstored(self, events: list[FramedEvent]) -> list[FramedEvent]:
        """The events past the highest offset the store holds for their partition."""
        for topic in {e.topic for e in events} - self._positions_read:
            table = table_for_topic(topic, self.cfg.topics)
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
        events = self.consumer.poll_framed(max(self.cfg.batch_rows - len(self._buffer), 1), timeout_s)
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
