"""The reshape agent in Faust: ``ReshapeAgent`` (streams/agents/reshape_agent.py) wired to
Faust's consumer, topics and tables.

Tables it owns:
- ``reshape-state`` (key: the partition number): the whole ``PartitionReshaper`` of that
  feedback partition -- group buffer, ``ReshapeState`` (running statistics, EMA baseline,
  pattern failure history), the normalisation batch still filling, open metrics window,
  last applied feedback offset -- as one
  value, so the state and the offset it covers are always written together. Its changelog
  partition is the feedback partition, so the worker that owns feedback partition p also
  recovers state p.
- ``pattern-tumbling`` / ``pattern-hopping`` (key: bug pattern, and ``*`` for all):
  ``WindowStats`` per pattern in event time (the newest ``created_at_ms`` of the group,
  rounded down to the hop step), for queries.

A Faust timer writes one empty record per owned partition to ``<app_id>-ticks``
(co-partitioned with feedback): the clock the agent times groups out by.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import faust
from faust.types import TP

from streams.agents.emit import Outgoing
from streams.agents.monitoring import merge
from streams.agents.reshape_agent import LogRecord, PatternSums, ReshapeAgent
from streams.agents.supervision import crash_the_worker
from streams.reshaping.config import ReshapingConfig
from streams.settings import StreamSettings, ticks_topic_name

STATE_TABLE = "reshape-state"
TUMBLING_TABLE = "pattern-tumbling"
HOPPING_TABLE = "pattern-hopping"


def log_record(event) -> LogRecord:
    """A Faust event as the agent reads it (Faust's timestamp is in seconds, a float)."""
    msg = event.message
    return LogRecord(msg.topic, msg.partition, msg.offset, round(msg.timestamp * 1000), msg.key, event.value)


class PartitionedTable(faust.Table):
    """A table whose changelog partition is the feedback partition being written for.

    A plain Faust table writes to the partition of the current stream event; a batch from
    ``take_events`` spans partitions, so the writer names the partition instead
    (``writing_for``) through Faust's documented hook for it, ``partition_for_key``."""

    writer_partition: int | None = None

    def partition_for_key(self, key: Any) -> int:
        if self.writer_partition is None:
            raise RuntimeError(f"table {self.name}: written outside writing_for(partition)")
        return self.writer_partition

    @contextmanager
    def writing_for(self, partition: int) -> Iterator[None]:
        self.writer_partition = partition
        try:
            yield
        finally:
            self.writer_partition = None


def partitioned_table(app: faust.App, name: str, **options: Any) -> PartitionedTable:
    """A ``PartitionedTable`` registered with the app, as ``app.Table`` registers its own."""
    return app.tables.add(PartitionedTable(app, name=name, beacon=app.tables.beacon, **options))


class FaustFeed:
    """The agent's consuming side: the Faust consumer of the feedback topic."""

    def __init__(self, app: faust.App, feedback_topic: str):
        self.app, self.feedback_topic = app, feedback_topic

    def highwater(self, partition: int) -> int | None:
        return self.app.consumer.highwater(TP(self.feedback_topic, partition))

    async def log_start(self, partition: int) -> int:
        tp = TP(self.feedback_topic, partition)
        return next(iter((await self.app.consumer.earliest_offsets(tp)).values()))

    async def rewind(self, partition: int, offset: int) -> None:
        # seek_wait, not seek: Faust's `seek` changes aiokafka's fetcher from this thread while
        # the consumer thread iterates the fetcher's records, which raised KeyError there
        # (a dead worker); seek_wait runs the seek on the consumer's own thread.
        await self.app.consumer.seek_wait({TP(self.feedback_topic, partition): offset})


class FaustEmitter:
    """The agent's producing side: Faust topics, one per output topic name."""

    def __init__(self, app: faust.App, names: list[str]):
        self.topics = {name: app.topic(name) for name in names}
        self.pending: list = []

    async def send(self, record: Outgoing) -> None:
        self.pending.append(await self.topics[record.topic].send(key=record.key, value=record.value))

    async def delivered(self) -> None:
        pending, self.pending = self.pending, []
        for future in pending:
            await future  # raises if the broker refused the record


class FaustStateStore:
    """The agent's state: the ``reshape-state`` table and the two pattern window tables."""

    def __init__(self, app: faust.App, settings: StreamSettings):
        # bytes, stored raw: the agent encodes its state itself (``encode_state``)
        self.states = partitioned_table(app, STATE_TABLE, default=None, value_type=bytes)
        self.group_time_s = 0.0  # event time of the window update being applied
        self.windowed = [partitioned_table(app, TUMBLING_TABLE, default=dict),  # empty dict = empty window
                         partitioned_table(app, HOPPING_TABLE, default=dict)]
        self.tumbling = self.windowed[0].tumbling(
            settings.pattern_window_s, expires=settings.pattern_expires_s).relative_to(self.event_time)
        self.hopping = self.windowed[1].hopping(
            settings.pattern_window_s, settings.pattern_hop_s,
            expires=settings.pattern_expires_s).relative_to(self.event_time)

    def event_time(self, _event=None) -> float:
        return self.group_time_s

    def load(self, partition: int) -> bytes | None:
        return self.states.get(partition)

    def save(self, partition: int, state: bytes, patterns: PatternSums) -> None:
        with self.states.writing_for(partition), self.windowed[0].writing_for(partition), \
                self.windowed[1].writing_for(partition):
            for (pattern, step_s), stats in patterns.items():
                self.group_time_s = step_s
                delta = stats.to_dict()
                self.tumbling[pattern].apply(merge, delta)
                self.hopping[pattern].apply(merge, delta)
            self.states[partition] = state


def install_reshape(app: faust.App, cfg: ReshapingConfig, settings: StreamSettings) -> None:
    topics = settings.topics
    ticks_name = ticks_topic_name(app.conf.id)
    agent = ReshapeAgent(
        cfg, settings, consumer=app.conf.id, ticks_topic=ticks_name, feed=FaustFeed(app, topics.feedback),
        emitter=FaustEmitter(app, [topics.advantages(cfg.config_id), topics.metrics, topics.deadletter]),
        store=FaustStateStore(app, settings))

    @app.on_partitions_revoked.connect
    async def _forget_live(sender, revoked, **kwargs) -> None:
        agent.forget()

    @app.agent(app.topic(topics.feedback, ticks_name))
    @crash_the_worker(app)
    async def reshape(stream):
        async for batch in stream.take_events(settings.batch_max_events, within=settings.batch_within_s):
            await agent.process([log_record(event) for event in batch])

    @app.timer(settings.tick_interval_s)
    async def tick() -> None:
        # ticks carry no data (an extra or lost tick only moves a clock), so they go
        # straight through the producer
        now_ms = int(time.time() * 1000)
        await app.producer.maybe_start()
        for tp in app.consumer.assignment():
            if tp.topic == topics.feedback:
                await app.producer.send(ticks_name, None, b"", tp.partition, now_ms / 1000.0, None)
