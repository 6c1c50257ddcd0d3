"""The reshape agent behind three ports: feedback in, ``advantages.<config_id>`` and window
metrics out, with no Faust in sight.

``ReshapeAgent.process`` takes one batch of log records (feedback and clock ticks, several
partitions mixed) and talks to the world only through what it was given:
- ``Feed``, the consuming side: a partition's high-water mark, and a rewind;
- ``Emitter``, the producing side: records queued in order, then waited for until delivered;
- ``StateStore``: one stored state per partition, and the per-pattern window sums.
``streams/agents/reshape.py`` plugs in Faust's consumer, topics and tables; the tests plug
in lists and dicts and drive the agent record by record, as Kafka Streams' test driver
does, without a broker.

Processing guarantee (at-least-once, no lost and no conflicting advantages). Per batch:
  1. every partition's reshaper takes its records; feedback at or below its applied offset
     (re-delivered after a crash) is skipped;
  2. the advantages, metrics and dead letters are sent and *delivered*;
  3. each touched partition's state is written once.
The stored state is the position: after a crash it is some state S the worker really had,
with its offset A, and feedback after A must be reshaped from S. Feedback at or below A is
skipped; if the consumer hands over a record beyond A + 1 (its committed offset ran ahead
of the state, or records went missing in a rebalance) the agent rewinds the partition to
A + 1 (the log start, for a state that has taken in nothing) rather than skip anything.
Reshaping from S is exactly what happened the first time (the advantages are a pure
function of S and the log), so an advantage is at most re-emitted, with the same event id
and the same values.

Group timeouts and the deadlines of normalisation batches use log time. Clock ticks
(records of the ticks topic, co-partitioned with feedback) advance a partition's clock to
``tick time - late_grace_ms`` only when every feedback record of that partition already
written has been taken in. A backlog (a restart, a slow worker) therefore never times out
a group whose missing members are already in the log (nor closes a batch a logged group
still belongs to), and a replay of the log takes the same decisions.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from schemas.codec import CODEC, DecodeError
from streams.agents.emit import Outgoing, encoded_output, undecodable
from streams.agents.monitoring import WindowStats
from streams.agents.processor import Output, PartitionReshaper, new_reshaper
from streams.reshaping.config import ReshapingConfig
from streams.settings import StreamSettings

log = logging.getLogger(__name__)

PatternSums = Mapping[tuple[str, float], WindowStats]  # (bug pattern or "*", hop step start in s) -> sums


@dataclass(frozen=True)
class LogRecord:
    """One consumed record: where it sits in the log, its log time, its raw bytes."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


class Feed(Protocol):
    """The consuming side of the agent."""

    def highwater(self, partition: int) -> int | None:
        """The offset the next feedback record of ``partition`` will get (None: not known yet)."""

    async def log_start(self, partition: int) -> int:
        """The offset of the oldest feedback record of ``partition`` still in the log."""

    async def rewind(self, partition: int, offset: int) -> None:
        """Deliver ``partition`` again from ``offset``."""


class Emitter(Protocol):
    """The producing side of the agent."""

    async def send(self, record: Outgoing) -> None:
        """Queue ``record``; records of one topic and key keep the order they were sent in."""

    async def delivered(self) -> None:
        """Return once every record sent so far is acknowledged; raise if one was not."""


class StateStore(Protocol):
    """Where the agent keeps its state: one value per feedback partition."""

    def load(self, partition: int) -> bytes | None:
        """The stored state of ``partition``, None before its first write."""

    def save(self, partition: int, state: bytes, patterns: PatternSums) -> None:
        """Store the state of ``partition`` and add ``patterns`` to the per-pattern windows."""


def encode_state(reshaper: PartitionReshaper) -> bytes:
    """The stored form of a partition's state. JSON bytes, made at write time: a table
    serialises its value later, and by then a live dict may have changed under it."""
    return json.dumps(reshaper.to_dict(), separators=(",", ":")).encode()


def pattern_sums(groups: Sequence[Sequence[dict]], hop_s: float) -> dict[tuple[str, float], WindowStats]:
    """The groups' window statistics summed per bug pattern (and ``*`` for all) and hop step,
    by the newest event time in each group: groups in the same step fall in the same windows
    (the window size is a multiple of the hop), so one table update per pattern and step
    does, and each update is a changelog record per window."""
    sums: dict[tuple[str, float], WindowStats] = defaultdict(WindowStats)
    for group in groups:
        event_s = max(r["created_at_ms"] for r in group) / 1000.0
        step_s = event_s - event_s % hop_s
        stats = WindowStats.of_group(group)
        for pattern in {group[0]["bug_pattern"], "*"}:
            sums[pattern, step_s] = sums[pattern, step_s] + stats
    return dict(sums)


class ReshapeAgent:
    """One worker's reshaping of the feedback partitions it is handed."""

    def __init__(self, cfg: ReshapingConfig, settings: StreamSettings, *, consumer: str, ticks_topic: str,
                 feed: Feed, emitter: Emitter, store: StateStore):
        self.cfg, self.settings = cfg, settings
        self.consumer, self.ticks_topic = consumer, ticks_topic  # consumer: named in dead letters
        self.feed, self.emitter, self.store = feed, emitter, store
        # Live reshapers, rebuilt from the store after a rebalance (the store is the truth;
        # this only saves decoding the stored state on every batch).
        self.live: dict[int, PartitionReshaper] = {}
        self.rewound_to: dict[int, int] = {}  # partition -> offset of its last rewind, to log each once

    def forget(self) -> None:
        """Drop the live reshapers (partitions were revoked: another worker may move them on)."""
        self.live.clear()

    async def process(self, batch: Sequence[LogRecord]) -> None:
        """One batch through the agent: steps, then delivery, then the states (in that order)."""
        outs: dict[int, Output] = {}
        reshapers: dict[int, PartitionReshaper] = {}
        for record in batch:
            reshaper = reshapers[record.partition] = self.reshaper(record.partition)
            await self.step(record, reshaper, outs.setdefault(record.partition, Output()))
        topics = self.settings.topics
        for out in outs.values():
            for outgoing in encoded_output(out, topics, self.cfg.config_id, self.consumer):
                await self.emitter.send(outgoing)
        # delivered before the state that records them is written: a crash in between
        # re-emits them (same ids, same values) rather than loses them
        await self.emitter.delivered()
        for partition, out in outs.items():
            self.store.save(partition, encode_state(reshapers[partition]),
                            pattern_sums(out.groups, self.settings.pattern_hop_s))

    def reshaper(self, partition: int) -> PartitionReshaper:
        reshaper = self.live.get(partition)
        if reshaper is None:
            stored = self.store.load(partition)
            reshaper = (new_reshaper(self.cfg, self.settings, partition) if stored is None
                        else PartitionReshaper.from_dict(self.cfg, json.loads(stored)))
            self.live[partition] = reshaper
        return reshaper

    async def step(self, record: LogRecord, reshaper: PartitionReshaper, out: Output) -> None:
        """One record of the batch through its partition's reshaper."""
        if record.topic == self.ticks_topic:
            if self.caught_up(reshaper):
                out.extend(reshaper.on_clock(record.timestamp_ms - self.settings.late_grace_ms))
            return
        if reshaper.has_applied(record.offset):
            return
        if record.offset > reshaper.applied_offset + 1:
            # The stored state, not the consumer's committed offset, says where the
            # partition stands: records it has not taken in are read again, never skipped.
            # A state that has taken in nothing starts at the log start.
            resume = max(reshaper.applied_offset + 1, await self.feed.log_start(record.partition))
            if record.offset > resume:
                await self.rewind(reshaper, record.offset, resume)
                return
        try:
            feedback = CODEC.decode(record.value, "Feedback")
        except DecodeError as exc:
            await self.emitter.send(undecodable(self.settings.topics, record.partition, record.offset,
                                                self.consumer, record.key, record.value, exc))
            out.extend(reshaper.on_undecodable(record.offset, record.timestamp_ms))
            return
        out.extend(reshaper.on_feedback(feedback, record.offset, record.timestamp_ms))

    def caught_up(self, reshaper: PartitionReshaper) -> bool:
        """Whether every feedback record of the partition already written has been taken in."""
        highwater = self.feed.highwater(reshaper.partition)
        return highwater is not None and reshaper.applied_offset + 1 >= highwater

    async def rewind(self, reshaper: PartitionReshaper, offset: int, resume: int) -> None:
        """Read the partition again from ``resume``, the first record its stored state has not
        taken in. Records fetched before the rewind still arrive and land here too; each rewinds
        again, which is harmless."""
        if self.rewound_to.get(reshaper.partition) != resume:
            self.rewound_to[reshaper.partition] = resume
            log.warning("feedback partition %d: offset %d arrived, state covers up to %d; re-reading",
                        reshaper.partition, offset, reshaper.applied_offset)
        await self.feed.rewind(reshaper.partition, resume)
