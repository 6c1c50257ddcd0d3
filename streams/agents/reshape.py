"""The reshape agent: feedback in, ``advantages.<config_id>`` and window metrics out.

Tables it owns:
- ``reshape-state`` (key: the partition number): the whole ``PartitionReshaper`` of that
  feedback partition -- group buffer, ``ReshapeState`` (running statistics, EMA baseline,
  pattern failure history), open metrics window, last applied feedback offset -- as one
  value, so the state and the offset it covers are always written together. Its changelog
  partition is the feedback partition, so the worker that owns feedback partition p also
  recovers state p.
- ``pattern-tumbling`` / ``pattern-hopping`` (key: bug pattern, and ``*`` for all):
  ``WindowStats`` per pattern in event time (the newest ``created_at_ms`` of the group,
  rounded down to the hop step), for queries.

Processing guarantee (at-least-once, no lost and no conflicting advantages). Per batch of
events (``stream.take_events``):
  1. every partition's reshaper takes its events; feedback at or below its applied offset
     (re-delivered after a crash) is skipped;
  2. the advantages, metrics and dead letters are sent and *delivered*;
  3. each touched partition's state is written once, in the context of its last event.
The stored state is the position: after a crash it is some state S the worker really had,
with its offset A, and feedback after A must be reshaped from S. Feedback at or below A is
skipped; if Faust hands over a record beyond A + 1 (its committed offset ran ahead of the
state, or records went missing in a rebalance) the agent seeks the partition back to
A + 1 rather than skip anything. Reshaping from S is exactly what happened the first time
(the advantages are a pure function of S and the log), so an advantage is at most
re-emitted, with the same event id and the same values.

Group timeouts use log time. A Faust timer writes one empty record per owned partition to
``<app_id>-ticks`` (co-partitioned with feedback); the agent advances a partition's clock
to ``tick time - late_grace_ms`` only when it has consumed all of that partition's
feedback. A backlog (a restart, a slow worker) therefore never times out a group whose
missing members are already in the log, and a replay of the log takes the same decisions.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator

import faust
from faust.streams import _current_event  # the context variable behind faust.current_event()
from faust.types import TP

from schemas.codec import CODEC, DecodeError
from streams.agents.emit import Outgoing, encoded_output, undecodable
from streams.agents.monitoring import WindowStats, merge
from streams.agents.processor import Output, PartitionReshaper, new_reshaper
from streams.agents.supervision import crash_the_worker
from streams.settings import StreamSettings, ticks_topic_name
from streams.reshaping.config import ReshapingConfig

STATE_TABLE = "reshape-state"
TUMBLING_TABLE = "pattern-tumbling"
HOPPING_TABLE = "pattern-hopping"


def log_time_ms(message) -> int:
    """Kafka timestamp of a Faust message (seconds, float) back in whole milliseconds."""
    return round(message.timestamp * 1000)


@contextmanager
def current(event) -> Iterator[None]:
    """Make ``event`` Faust's current event. A table write goes to the changelog partition of
    the current event, and a batch from ``take_events`` spans partitions, so each
    partition's state is written in the context of one of its own events."""
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


def install_reshape(app: faust.App, cfg: ReshapingConfig, settings: StreamSettings) -> None:
    ticks_name = ticks_topic_name(app.conf.id)
    topics = settings.topics
    source = app.topic(topics.feedback, ticks_name)
    outputs = {name: app.topic(name) for name in (topics.advantages(cfg.config_id), topics.metrics,
                                                  topics.deadletter)}

    # Values are JSON bytes made at write time: Faust serialises a table value only when its
    # producer gets to it, later, and by then a live dict may have changed under it.
    states = app.Table(STATE_TABLE, default=None, value_type=bytes)  # bytes: stored raw
    group_time = {"s": 0.0}  # event time of the group being accounted, read by the windowed tables

    def event_time(_event=None) -> float:
        return group_time["s"]

    def pattern_table(name: str) -> faust.Table:
        return app.Table(name, default=dict)  # empty dict = empty window

    tumbling = pattern_table(TUMBLING_TABLE).tumbling(
        settings.pattern_window_s, expires=settings.pattern_expires_s).relative_to(event_time)
    hopping = pattern_table(HOPPING_TABLE).hopping(
        settings.pattern_window_s, settings.pattern_hop_s, expires=settings.pattern_expires_s).relative_to(event_time)

    # Live reshapers, rebuilt from the table after a rebalance (the table is the truth;
    # this only saves decoding the stored state on every batch).
    live: dict[int, PartitionReshaper] = {}

    @app.on_partitions_revoked.connect
    async def _forget_live(sender, revoked, **kwargs) -> None:
        live.clear()

    def reshaper_for(event) -> PartitionReshaper:
        partition = event.message.partition
        proc = live.get(partition)
        if proc is None:
            with current(event):
                stored = states.get(partition)
            proc = (new_reshaper(cfg, settings, partition) if stored is None
                    else PartitionReshaper.from_dict(cfg, json.loads(stored)))
            live[partition] = proc
        return proc

    def caught_up(proc: PartitionReshaper) -> bool:
        """Whether every feedback record of the partition already written has been taken in."""
        highwater = app.consumer.highwater(TP(topics.feedback, proc.partition))
        return highwater is not None and proc.applied_offset + 1 >= highwater

    rewound_to: dict[int, int] = {}  # partition -> offset of its last rewind, to log each once

    async def rewind(proc: PartitionReshaper, offset: int) -> None:
        """Read the partition again from just after its stored state's offset. Records fetched
        before the seek still arrive and land here too; each seeks again, which is harmless."""
        if rewound_to.get(proc.partition) != proc.applied_offset + 1:
            rewound_to[proc.partition] = proc.applied_offset + 1
            app.log.warning("feedback partition %d: offset %d arrived, state covers up to %d; re-reading",
                            proc.partition, offset, proc.applied_offset)
        # seek_wait, not seek: Faust's `seek` changes aiokafka's fetcher from this thread while
        # the consumer thread iterates the fetcher's records, which raised KeyError there
        # (a dead worker); seek_wait runs the seek on the consumer's own thread.
        await app.consumer.seek_wait({TP(topics.feedback, proc.partition): proc.applied_offset + 1})

    async def step(event, proc: PartitionReshaper, out: Output, pending: list) -> None:
        """One event of the batch through its partition's reshaper."""
        msg = event.message
        if msg.topic == ticks_name:
            if caught_up(proc):
                out.extend(proc.on_clock(log_time_ms(msg) - settings.late_grace_ms))
            return
        if proc.has_applied(msg.offset):
            return
        if proc.applied_offset >= 0 and msg.offset > proc.applied_offset + 1:
            # The stored state, not Faust's committed offset, says where the partition
            # stands: records it has not taken in are read again, never skipped.
            await rewind(proc, msg.offset)
            return
        try:
            feedback = CODEC.decode(event.value, "Feedback")
        except DecodeError as exc:
            await send_all([undecodable(topics, msg.partition, msg.offset, app.conf.id, msg.key, event.value, exc)],
                           pending)
            out.extend(proc.on_undecodable(msg.offset, log_time_ms(msg)))
            return
        out.extend(proc.on_feedback(feedback, msg.offset, log_time_ms(msg)))

    async def send_all(records: list[Outgoing], pending: list) -> None:
        for rec in records:
            pending.append(await outputs[rec.topic].send(key=rec.key, value=rec.value))

    def account_patterns(out: Output) -> None:
        """Add the batch's groups to the per-pattern windows, one table update per pattern and
        hop step: groups in the same step fall in the same windows (the window size is a
        multiple of the hop), and each update is a changelog record per window."""
        sums: dict[tuple[str, float], WindowStats] = defaultdict(WindowStats)
        for group in out.groups:
            event_s = max(r["created_at_ms"] for r in group) / 1000.0
            step_s = event_s - event_s % settings.pattern_hop_s
            stats = WindowStats.of_group(group)
            for pattern in {group[0]["bug_pattern"], "*"}:
                sums[pattern, step_s] = sums[pattern, step_s] + stats
        for (pattern, step_s), stats in sums.items():
            group_time["s"] = step_s
            delta = stats.to_dict()
            tumbling[pattern].apply(merge, delta)
            hopping[pattern].apply(merge, delta)

    @app.agent(source)
    @crash_the_worker(app)
    async def reshape(stream):
        async for batch in stream.take_events(settings.batch_max_events, within=settings.batch_within_s):
            outs: dict[int, Output] = {}
            procs: dict[int, PartitionReshaper] = {}
            last: dict[int, object] = {}  # partition -> its last event in the batch
            pending: list = []
            for event in batch:
                proc = procs[event.message.partition] = reshaper_for(event)
                last[proc.partition] = event
                await step(event, proc, outs.setdefault(proc.partition, Output()), pending)
            for out in outs.values():
                await send_all(encoded_output(out, topics, cfg.config_id, app.conf.id), pending)
            # delivered before the state that records them is written: a crash in
            # between re-emits them (same ids, same values) rather than loses them
            await asyncio.gather(*pending)
            for partition, event in last.items():
                with current(event):
                    account_patterns(outs[partition])
                    states[partition] = json.dumps(procs[partition].to_dict(), separators=(",", ":")).encode()

    @app.timer(settings.tick_interval_s)
    async def tick() -> None:
        # ticks carry no data (an extra or lost tick only moves a clock), so they go
        # straight through the producer
        now_ms = int(time.time() * 1000)
        await app.producer.maybe_start()
        for tp in app.consumer.assignment():
            if tp.topic == topics.feedback:
                await app.producer.send(ticks_name, None, b"", tp.partition, now_ms / 1000.0, None)
