"""Everything the reshaping of one feedback partition remembers, and how a record moves it.

``PartitionReshaper`` is the pure heart of the reshape agent and of the replay tool: a
feedback record (with its offset and log time) in; advantage records, metric records and
rejected records out. Its whole state (group buffer, ``ReshapeState``, the batch of
normalisation mode ``batch`` still filling, the open metrics window, the last applied
offset) is one JSON-able dict, stored under one table key per partition, so the state and
the offset it covers are always written together.

Why state per partition: a GRPO group lives on one partition, and the order of groups
*within* a partition is fixed by the log, so per-partition global statistics (running
stats, EMA baseline, pattern failure history) are deterministic and a replay reproduces
them exactly; with several partitions each keeps its own statistics over its share of
the groups (group ids hash uniformly, so the shares are statistically alike).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schemas.records import build_record
from streams.agents.batches import BatchBuffer
from streams.agents.grouping import GroupBuffer, ReadyGroup
from streams.agents.monitoring import WindowStats
from streams.reshaping.config import ReshapingConfig
from streams.reshaping.errors import ReshapingError
from streams.reshaping.pipeline import ReshapeState, ScoredGroup, normalise_groups, score_group, validate_feedback

if TYPE_CHECKING:
    from streams.settings import StreamSettings


def advantage_event_id(config_id: str, rollout_id: str) -> str:
    """Deterministic id: a re-emitted advantage (crash, replay) carries the same id."""
    return hashlib.sha256(f"advantage:{config_id}:{rollout_id}".encode()).hexdigest()[:32]


def metric_event_id(config_id: str, partition: int, window_start_ms: int) -> str:
    return hashlib.sha256(f"metric:{config_id}:{partition}:{window_start_ms}".encode()).hexdigest()[:32]


@dataclass
class Output:
    """What one step produced; the caller encodes and sends it."""

    advantages: list[dict[str, Any]] = field(default_factory=list)
    groups: list[list[dict[str, Any]]] = field(default_factory=list)  # the same records, per group
    metrics: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[tuple[dict[str, Any], Exception]] = field(default_factory=list)

    def extend(self, other: Output) -> None:
        self.advantages += other.advantages
        self.groups += other.groups
        self.metrics += other.metrics
        self.rejected += other.rejected


@dataclass
class PartitionReshaper:
    cfg: ReshapingConfig
    partition: int
    buffer: GroupBuffer
    state: ReshapeState = field(default_factory=ReshapeState)
    batches: BatchBuffer | None = None  # mode batch: the batch still filling (None: built from cfg)
    metrics_window_ms: int = 60_000
    window_start_ms: int = -1  # start of the open metrics window, -1 before the first group
    window: WindowStats = field(default_factory=WindowStats)
    applied_offset: int = -1  # highest feedback offset already taken in

    def __post_init__(self) -> None:
        if self.batches is None:
            norm = self.cfg.normalisation
            self.batches = BatchBuffer(size=norm.batch_groups, deadline_ms=norm.batch_deadline_ms)

    # ------------------------------------------------------------ steps

    def on_feedback(self, feedback: dict[str, Any], offset: int, log_ms: int, out: Output | None = None) -> Output:
        """Take one feedback record. A record at or below ``applied_offset`` was already taken
        in (redelivery after a crash under at-least-once) and is ignored. What the step
        produced is added to ``out`` (a batch's collector) or to a new ``Output``; returned."""
        out = Output() if out is None else out
        if self.has_applied(offset):
            return out
        self.applied_offset = offset
        try:
            validate_feedback(feedback)
        except ReshapingError as exc:
            out.rejected.append((feedback, exc))
            return self._reshape(self.buffer.advance(log_ms), out)
        return self._reshape(self.buffer.add(feedback, log_ms), out)

    def has_applied(self, offset: int) -> bool:
        """Whether the record at ``offset`` was already taken in (a redelivery after a crash)."""
        return offset <= self.applied_offset

    def on_undecodable(self, offset: int, log_ms: int, out: Output | None = None) -> Output:
        """A record that did not decode (dead-lettered by the caller): its offset counts as
        taken in, and its log time still moves the clock, as any record's does. ``out``: as
        in ``on_feedback``."""
        out = Output() if out is None else out
        if self.has_applied(offset):
            return out
        self.applied_offset = offset
        return self._reshape(self.buffer.advance(log_ms), out)

    def on_clock(self, now_ms: int) -> Output:
        """Advance the partition clock (timer of a quiet partition): release expired groups."""
        return self._reshape(self.buffer.advance(now_ms))

    def drain(self) -> Output:
        """Release all pending groups and the batch still filling, and close the metrics window
        (end of a bounded replay)."""
        out = self._reshape(self.buffer.drain())
        for batch in self.batches.drain():
            self._emit(batch, out)
        out.metrics += self._close_window()
        return out

    # ------------------------------------------------------------ internals

    def _reshape(self, ready: list[ReadyGroup], out: Output | None = None) -> Output:
        out = Output() if out is None else out
        clock = self.buffer.clock_ms  # the partition's log time: it alone times the batches
        for batch in self.batches.advance(clock):
            self._emit(batch, out)
        for group in ready:
            try:
                # every member passed validate_feedback in on_feedback before it was buffered
                scored, self.state = score_group(group.members, self.state, self.cfg, step=self.state.groups,
                                                 members_valid=True)
            except ReshapingError as exc:  # a group the core refuses (mixed sizes...): dead letters
                out.rejected += [(m, exc) for m in group.members]
                continue
            if self.cfg.normalisation.mode == "batch" and scored.compared:
                for batch in self.batches.add(scored, clock):
                    self._emit(batch, out)
            else:  # normalised alone; a group without comparison has nothing to wait for
                self._emit([scored], out)
        return out

    def _emit(self, groups: list[ScoredGroup], out: Output) -> None:
        """Normalise groups (one, or one batch) and add their records and metrics to ``out``."""
        records_of, self.state = normalise_groups(groups, self.state, self.cfg)
        for group, records in zip(groups, records_of):
            for rec, fb in zip(records, group.feedbacks):
                rec["event_id"] = advantage_event_id(self.cfg.config_id, rec["rollout_id"])
                rec["created_at_ms"] = fb["created_at_ms"]
            out.metrics += self._account(records, max(fb["created_at_ms"] for fb in group.feedbacks))
            out.advantages += records
            out.groups.append(records)

    def _account(self, records: list[dict[str, Any]], event_ms: int) -> list[dict[str, Any]]:
        """Add a group to the tumbling metrics window of its event time; close the window first
        if the group belongs to a later one."""
        start = event_ms - event_ms % self.metrics_window_ms
        closed: list[dict[str, Any]] = []
        if self.window_start_ms >= 0 and start > self.window_start_ms:
            closed = self._close_window()
        if self.window_start_ms < 0 or start > self.window_start_ms:
            self.window_start_ms = start
        # a late group (older window) counts in the open window rather than reopen a closed one
        self.window = self.window + WindowStats.of_group(records)
        return closed

    def _close_window(self) -> list[dict[str, Any]]:
        if self.window.groups == 0:
            return []
        start = self.window_start_ms
        metric = build_record(
            "Metric", event_id=metric_event_id(self.cfg.config_id, self.partition, start),
            created_at_ms=start + self.metrics_window_ms, source="reshape", step=self.state.groups,
            config_id=self.cfg.config_id, values=self.window.values(),
            labels={"partition": str(self.partition), "window_start_ms": str(start),
                    "window_ms": str(self.metrics_window_ms)})
        self.window = WindowStats()
        return [metric]

    # ------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        return {
            "config_id": self.cfg.config_id,
            "partition": self.partition,
            "buffer": self.buffer.to_dict(),
            "state": self.state.to_dict(),
            "batches": self.batches.to_dict(),
            "metrics_window_ms": self.metrics_window_ms,
            "window_start_ms": self.window_start_ms,
            "window": self.window.to_dict(),
            "applied_offset": self.applied_offset,
        }

    @classmethod
    def from_dict(cls, cfg: ReshapingConfig, data: dict[str, Any]) -> PartitionReshaper:
        if data["config_id"] != cfg.config_id:
            raise ValueError(f"stored state belongs to config {data['config_id']}, not {cfg.config_id}")
        return cls(
            cfg=cfg,
            partition=int(data["partition"]),
            buffer=GroupBuffer.from_dict(data["buffer"]),
            state=ReshapeState.from_dict(data["state"]),
            batches=BatchBuffer.from_dict(data["batches"]) if "batches" in data else None,
            metrics_window_ms=int(data["metrics_window_ms"]),
            window_start_ms=int(data["window_start_ms"]),
            window=WindowStats.from_dict(data["window"]),
            applied_offset=int(data["applied_offset"]),
        )


def new_reshaper(cfg: ReshapingConfig, settings: "StreamSettings", partition: int) -> PartitionReshaper:
    """A fresh partition state, as the reshape agent and the replay both start one."""
    return PartitionReshaper(
        cfg=cfg,
        partition=partition,
        buffer=GroupBuffer(timeout_ms=settings.group_timeout_ms, recent_limit=settings.recent_groups),
        metrics_window_ms=settings.metrics_window_ms,
    )
