"""Running statistics the reshaping keeps between groups, as immutable plain data.

Every update returns a new value and leaves the old one untouched, and every type has
``to_dict``/``from_dict``: the stream keeps these in changelog-backed tables and a replay
rebuilds them from the log, so nothing here may hide state.

- ``RunningStats``: Welford's count/mean/M2.
- ``EmaBaseline``: ``b <- beta b + (1 - beta) mean_batch``; the first batch sets ``b``.
- ``FailureHistory``: the bounded recent outcomes of one bug pattern, which drive R_progress.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

# Hand-written rather than numpy: the state must persist between calls and merge across
# partitions, which numpy's one-shot mean/var do not offer.


@dataclass(frozen=True)
class RunningStats:
    """Welford running statistics: ``m2`` is the sum of squared deviations from the mean."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def update(self, x: float) -> RunningStats:
        count = self.count + 1
        delta = x - self.mean
        mean = self.mean + delta / count
        return RunningStats(count, mean, self.m2 + delta * (x - mean))

    def update_many(self, xs: Iterable[float]) -> RunningStats:
        """``update`` for each x in turn (the same float operations, one object at the end)."""
        count, mean, m2 = self.count, self.mean, self.m2
        for x in xs:
            count += 1
            delta = x - mean
            mean += delta / count
            m2 += delta * (x - mean)
        return RunningStats(count, mean, m2)

    @property
    def variance(self) -> float:
        """Population variance (ddof 0), 0 for fewer than two samples."""
        return self.m2 / self.count if self.count > 1 else 0.0

    @property
    def sample_variance(self) -> float:
        """Unbiased variance (ddof 1), 0 for fewer than two samples."""
        return self.m2 / (self.count - 1) if self.count > 1 else 0.0

    @property
    def std(self) -> float:
        """Population standard deviation, the one the normalisation divides by."""
        return math.sqrt(max(self.variance, 0.0))

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "mean": self.mean, "m2": self.m2}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunningStats:
        return cls(int(data["count"]), float(data["mean"]), float(data["m2"]))


@dataclass(frozen=True)
class EmaBaseline:
    """Exponential moving average of batch means; ``value`` is None until the first batch."""

    value: float | None = None

    def update(self, batch_mean: float, beta: float) -> EmaBaseline:
        if self.value is None:  # the first batch initialises b instead of decaying from 0
            return EmaBaseline(batch_mean)
        return EmaBaseline(beta * self.value + (1.0 - beta) * batch_mean)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EmaBaseline:
        value = data.get("value")
        return cls(None if value is None else float(value))


# ---------------------------------------------------------------- failure history

# An event-time window has no natural size limit; a burst of one pattern must not grow
# the table without bound. Far more outcomes than any failure threshold needs.
HISTORY_CAP = 4096


@dataclass(frozen=True)
class FailureHistory:
    """Recent outcomes of one bug pattern, oldest first: ``(event_time_ms, fixed)`` pairs.

    The window is either the last ``window`` outcomes (``kind="events"``) or the outcomes
    newer than ``window`` ms before the newest one (``kind="ms"``).
    """

    outcomes: tuple[tuple[int, bool], ...] = ()

    def record(
        self, outcomes: Iterable[tuple[int, bool]], kind: Literal["events", "ms"], window: int
    ) -> FailureHistory:
        """Append outcomes in the order given, then drop what fell out of the window."""
        merged = self.outcomes + tuple((int(t), bool(fixed)) for t, fixed in outcomes)
        if kind == "events":
            merged = merged[-window:]
        else:
            newest = max((t for t, _ in merged), default=0)
            merged = tuple(o for o in merged if o[0] > newest - window)[-HISTORY_CAP:]
        return FailureHistory(merged)

    def failures_since_last_fix(self, kind: Literal["events", "ms"], window: int, now_ms: int | None = None) -> int:
        """Failures inside the window recorded after the newest fix (all of them if no fix).

        For ``kind="ms"`` the window ends at ``now_ms`` (default: the newest outcome).
        """
        outcomes = self.outcomes[-window:] if kind == "events" else self.outcomes
        if kind == "ms":
            now = max((t for t, _ in outcomes), default=0) if now_ms is None else now_ms
            outcomes = tuple(o for o in outcomes if now - window < o[0] <= now)
        failures = 0
        for _, fixed in reversed(outcomes):
            if fixed:
                break
            failures += 1
        return failures

    def to_dict(self) -> dict[str, Any]:
        return {"outcomes": [[t, fixed] for t, fixed in self.outcomes]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FailureHistory:
        return cls(tuple((int(t), bool(fixed)) for t, fixed in data["outcomes"]))
