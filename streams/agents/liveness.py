"""A worker that holds a source partition it no longer reads takes itself down.

faust-streaming can leave a partition assigned to a worker and never read again after
rebalances that follow each other closely (seen with two workers, one of them restarted:
a rollouts partition kept its two records, uncommitted, until the run gave up). Faust's own
livelock check only logs, and from worker start (`StreamSettings.commit_livelock_timeout_s`).
Here every worker watches the rollouts and feedback partitions assigned to it: one with
records left whose committed offset has not moved for ``stall_timeout_s`` is stalled. The
worker logs which, with their offsets, and exits with STALLED_EXIT; its supervisor
(`reshaper run`) restarts it and counts the restart, and the new worker reads the partition
from its committed offset, as after any crash (nothing is lost: the crash tests).

`StallWatch` is the pure clock; `install_liveness` wires it to the worker's assignment and
the group's offsets in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable

from streams.agents.supervision import end_the_worker

log = logging.getLogger(__name__)

STALLED_EXIT = 75  # EX_TEMPFAIL: try again (a restarted worker reads on)

Partition = tuple[str, int]


@dataclass(frozen=True)
class Progress:
    committed: int
    since: float  # when this committed offset was first seen with records left behind it


class StallWatch:
    """Partitions whose records wait behind a committed offset that has not moved for `timeout_s`."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._progress: dict[Partition, Progress] = {}

    def observe(self, offsets: dict[Partition, tuple[int, int]], now: float) -> list[Partition]:
        """`offsets`: partition -> (committed offset, end offset) of the partitions held now.
        A partition read to its end, or no longer held, is forgotten; its clock starts again
        when records wait once more."""
        held: dict[Partition, Progress] = {}
        for partition, (committed, end) in offsets.items():
            if end <= committed:
                continue
            last = self._progress.get(partition)
            held[partition] = last if last is not None and last.committed == committed else Progress(committed, now)
        self._progress = held
        return sorted(p for p, progress in held.items() if now - progress.since >= self.timeout_s)

    def describe(self, partition: Partition, offsets: dict[Partition, tuple[int, int]], now: float) -> str:
        committed, end = offsets[partition]
        waiting = end - committed
        return (f"{partition[0]}[{partition[1]}]: committed {committed}, {waiting} record{'s' * (waiting != 1)} "
                f"waiting, no commit for {now - self._progress[partition].since:.0f}s")


def group_offsets(bootstrap: str, group: str, partitions: list[Partition],
                  timeout_s: float = 10.0) -> dict[Partition, tuple[int, int]]:
    """(committed, end) of each partition for consumer `group`; a partition the group never
    committed counts as committed at 0. Blocking: call it off the event loop."""
    from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tps = [TopicPartition(topic, partition) for topic, partition in partitions]
    request = [ConsumerGroupTopicPartitions(group, tps)]
    committed = {(tp.topic, tp.partition): max(tp.offset, 0) for tp in
                 admin.list_consumer_group_offsets(request, request_timeout=timeout_s)[group]
                 .result(timeout=timeout_s).topic_partitions}
    ends = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=timeout_s,
                              isolation_level=IsolationLevel.READ_COMMITTED)
    return {(tp.topic, tp.partition): (committed[(tp.topic, tp.partition)], future.result(timeout=timeout_s).offset)
            for tp, future in ends.items()}


def exit_stalled(lines: list[str]) -> None:
    log.critical("stalled: %s; stopping the worker (exit %d) so that a new one reads on",
                 "; ".join(lines), STALLED_EXIT)
    end_the_worker(STALLED_EXIT)


def install_liveness(app, bootstrap: str, topics: list[str], timeout_s: float, interval_s: float,
                     on_stall: Callable[[list[str]], None] = exit_stalled) -> StallWatch:
    """A timer of `app` that checks its own partitions of `topics` every `interval_s`."""
    watch = StallWatch(timeout_s)

    @app.timer(interval_s)
    async def watch_progress() -> None:
        held = sorted({(tp.topic, tp.partition) for tp in app.consumer.assignment() if tp.topic in topics})
        if not held:
            watch.observe({}, 0.0)
            return
        try:
            offsets = await asyncio.get_running_loop().run_in_executor(
                None, group_offsets, bootstrap, app.conf.id, held)
        except Exception as exc:  # the broker unreachable this round: the clock simply goes on
            log.warning("could not read the offsets of %d partitions: %s", len(held), exc)
            return
        now = asyncio.get_running_loop().time()
        stalled = watch.observe(offsets, now)
        if stalled:
            on_stall([watch.describe(p, offsets, now) for p in stalled])

    return watch
