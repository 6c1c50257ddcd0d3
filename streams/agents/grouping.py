"""The GRPO group buffer of one feedback partition: pure, deterministic, serialisable.

Both the Faust reshape agent and the replay tool feed feedback records through
``GroupBuffer`` and so decide identically when a group is ready and in which order groups
leave. A group leaves when its ``group_size``-th distinct member arrives, or when the
partition's clock passes its deadline (``group_timeout_ms`` after its first member).

The clock is the *log time* of the partition (the Kafka timestamp the feedback agent
stamped when it produced the record, a value kept in the log) and not the wall clock, so
a replay that reads the same records takes the same timeout decisions. The live agent's
timer advances the clock to ``now - late_grace_ms`` for partitions that go quiet; see
``streams/agents/reshape.py`` for the one case where that can differ from a replay.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReadyGroup:
    """Members of one group, in arrival order, ready to be reshaped."""

    group_id: str
    members: list[dict[str, Any]]
    complete: bool


@dataclass
class _Pending:
    deadline_ms: int
    members: list[dict[str, Any]]


@dataclass
class GroupBuffer:
    """Groups still waiting for members, the partition clock and the recently emitted groups.

    ``recent`` remembers the last ``recent_limit`` emitted group ids so that a straggler (a
    member arriving after its group left on timeout) or a re-delivered duplicate does not
    open a second, one-member group.
    """

    timeout_ms: int
    recent_limit: int = 4096
    clock_ms: int = 0
    pending: dict[str, _Pending] = field(default_factory=dict)  # insertion order = first arrival
    recent: deque[str] = field(default_factory=deque)
    dropped_late: int = 0
    dropped_duplicate: int = 0
    # set views of ``recent`` and of each group's rollout ids: membership tests on the
    # deque and the member lists were the hot spot of a replay
    _recent_ids: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _member_ids: dict[str, set[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._recent_ids = set(self.recent)
        self._member_ids = {gid: {m["rollout_id"] for m in p.members} for gid, p in self.pending.items()}

    def add(self, feedback: dict[str, Any], log_ms: int) -> list[ReadyGroup]:
        """Take one feedback record stamped ``log_ms``; return the groups that became ready.

        Expired groups leave first (their deadline passed before this record was written),
        then this record's group if it is now complete.
        """
        ready = self.advance(log_ms)
        gid = feedback["group_id"]
        if gid in self._recent_ids:
            self.dropped_late += 1
            return ready
        entry = self.pending.get(gid)
        if entry is None:
            entry = self.pending[gid] = _Pending(self.clock_ms + self.timeout_ms, [])
            self._member_ids[gid] = set()
        members = self._member_ids[gid]
        if feedback["rollout_id"] in members:
            self.dropped_duplicate += 1
            return ready
        members.add(feedback["rollout_id"])
        entry.members.append(feedback)
        if len(entry.members) >= feedback["group_size"]:
            ready.append(self._emit(gid, complete=True))
        return ready

    def advance(self, now_ms: int) -> list[ReadyGroup]:
        """Move the clock forward (never back) and release every group past its deadline."""
        self.clock_ms = max(self.clock_ms, int(now_ms))
        if not self.pending:
            return []
        expired = [gid for gid, p in self.pending.items() if p.deadline_ms <= self.clock_ms]
        # sort is stable: equal deadlines keep first-arrival order
        expired.sort(key=lambda gid: self.pending[gid].deadline_ms)
        return [self._emit(gid, complete=False) for gid in expired]

    def drain(self) -> list[ReadyGroup]:
        """Release every pending group (end of a bounded replay)."""
        return [self._emit(gid, complete=False) for gid in list(self.pending)]

    def _emit(self, gid: str, complete: bool) -> ReadyGroup:
        entry = self.pending.pop(gid)
        del self._member_ids[gid]
        self.recent.append(gid)
        self._recent_ids.add(gid)
        while len(self.recent) > self.recent_limit:
            self._recent_ids.discard(self.recent.popleft())
        return ReadyGroup(gid, entry.members, complete)

    def to_dict(self) -> dict[str, Any]:
        return {
            "timeout_ms": self.timeout_ms,
            "recent_limit": self.recent_limit,
            "clock_ms": self.clock_ms,
            "pending": [{"group_id": g, "deadline_ms": p.deadline_ms, "members": list(p.members)}
                        for g, p in self.pending.items()],
            "recent": list(self.recent),
            "dropped_late": self.dropped_late,
            "dropped_duplicate": self.dropped_duplicate,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupBuffer:
        return cls(
            timeout_ms=int(data["timeout_ms"]),
            recent_limit=int(data["recent_limit"]),
            clock_ms=int(data["clock_ms"]),
            pending={p["group_id"]: _Pending(int(p["deadline_ms"]), list(p["members"])) for p in data["pending"]},
            recent=deque(data["recent"]),
            dropped_late=int(data["dropped_late"]),
            dropped_duplicate=int(data["dropped_duplicate"]),
        )
