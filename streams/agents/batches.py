"""The normalisation batches of one feedback partition (mode ``batch``): pure, deterministic, serialisable.

A batch is ``batch_groups`` consecutive compared groups of one partition, in the order the
group buffer releases them; it is released on its B-th group, or when the partition's clock
passes ``batch_deadline_ms`` after its first group was added, and its groups are then
normalised together (``pipeline.normalise_groups``).

Why batches are defined this way: which groups reach one learner step depends on arrival
order at the learner (other partitions, other workers, restarts), so a batch defined by
the learner's steps could never be reproduced by a replay. Here a batch depends only on
the partition's log: the order of its groups and its log time (the clock of
``GroupBuffer``, never the wall clock). A replay of the log forms the same batches, and
with several workers each partition's batches are still defined by its own log alone,
whichever worker owns it. The pending groups are part of the partition's saved state,
so a crash resumes a part-filled batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streams.reshaping.pipeline import ScoredGroup


@dataclass
class BatchBuffer:
    """Groups waiting for the rest of their batch, and when the batch falls due."""

    size: int
    deadline_ms: int
    pending: list[ScoredGroup] = field(default_factory=list)
    due_ms: int = -1  # log time the pending batch is released at; -1 when none is pending

    def add(self, group: ScoredGroup, clock_ms: int) -> list[list[ScoredGroup]]:
        """Add a group ready at partition time ``clock_ms``; return the batches it completes."""
        ready = self.advance(clock_ms)  # a batch already due is closed before this group joins
        if not self.pending:
            self.due_ms = clock_ms + self.deadline_ms
        self.pending.append(group)
        if len(self.pending) >= self.size or self.due_ms <= clock_ms:
            ready.append(self._release())
        return ready

    def advance(self, clock_ms: int) -> list[list[ScoredGroup]]:
        """The pending batch, if the partition's clock reached its deadline."""
        if self.pending and self.due_ms <= clock_ms:
            return [self._release()]
        return []

    def drain(self) -> list[list[ScoredGroup]]:
        """The pending batch, whatever the clock (end of a bounded replay)."""
        return [self._release()] if self.pending else []

    def _release(self) -> list[ScoredGroup]:
        batch, self.pending, self.due_ms = self.pending, [], -1
        return batch

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "deadline_ms": self.deadline_ms, "due_ms": self.due_ms,
                "pending": [g.to_dict() for g in self.pending]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchBuffer:
        return cls(size=int(data["size"]), deadline_ms=int(data["deadline_ms"]), due_ms=int(data["due_ms"]),
                   pending=[ScoredGroup.from_dict(g) for g in data["pending"]])
