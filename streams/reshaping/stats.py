"""Running statistics the reshaping keeps between groups, as immutable plain data.

Every update returns a new value and leaves the old one untouched, and every type has
``to_dict``/``from_dict``: the stream keeps these in changelog-backed tables and a replay
rebuilds them from the log, so nothing here may hide state.

- ``RunningStats``: Welford's count/mean/M2, mergeable across partitions (Chan et al.).
- ``EmaBaseline``: ``b <- beta b + (1 - beta) mean_batch``; the first batch sets ``b``.
- Event-time windows per bug pattern: tumbling and hopping window starts, and an
  accumulator of ``RunningStats`` per (pattern, window start).
- ``FailureHistory``: the bounded recent outcomes of one bug pattern, which drive R_progress.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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

    def merge(self, other: RunningStats) -> RunningStats:
        """Statistics of the union of both samples (Chan, Golub and LeVeque's pairwise formula)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / count
        m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / count
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


# ---------------------------------------------------------------- event-time windows


def tumbling_window_start(t_ms: int, size_ms: int) -> int:
    """Start of the one window ``[start, start + size)`` that holds ``t_ms``; windows begin at 0."""
    if size_ms <= 0:
        raise ValueError(f"window size must be positive, got {size_ms}")
    return t_ms - t_ms % size_ms  # Python's % floors, so negative times land correctly too


def hopping_window_starts(t_ms: int, size_ms: int, step_ms: int) -> list[int]:
    """Starts, ascending, of every window ``[k step, k step + size)`` that holds ``t_ms``.

    Needs ``0 < step <= size`` so that every event falls in at least one window; with
    ``step == size`` this is the tumbling window.
    """
    if size_ms <= 0 or step_ms <= 0 or step_ms > size_ms:
        raise ValueError(f"hopping windows need 0 < step <= size, got size={size_ms} step={step_ms}")
    latest = t_ms - t_ms % step_ms
    starts = []
    start = latest
    while start > t_ms - size_ms:
        starts.append(start)
        start -= step_ms
    return starts[::-1]


@dataclass(frozen=True)
class WindowSpec:
    """A tumbling (``step_ms`` None) or hopping window of event time."""

    size_ms: int
    step_ms: int | None = None

    def starts(self, t_ms: int) -> list[int]:
        if self.step_ms is None:
            return [tumbling_window_start(t_ms, self.size_ms)]
        return hopping_window_starts(t_ms, self.size_ms, self.step_ms)


@dataclass(frozen=True)
class PatternWindows:
    """Running statistics per (bug pattern, window start) for one ``WindowSpec``."""

    spec: WindowSpec
    windows: Mapping[tuple[str, int], RunningStats] = field(default_factory=dict)

    def update(self, pattern: str, t_ms: int, value: float) -> PatternWindows:
        windows = dict(self.windows)
        for start in self.spec.starts(t_ms):
            key = (pattern, start)
            windows[key] = windows.get(key, RunningStats()).update(value)
        return PatternWindows(self.spec, windows)

    def get(self, pattern: str, start: int) -> RunningStats:
        return self.windows.get((pattern, start), RunningStats())

    def expire(self, watermark_ms: int) -> PatternWindows:
        """Drop the windows that closed at or before ``watermark_ms`` (event time)."""
        kept = {key: s for key, s in self.windows.items() if key[1] + self.spec.size_ms > watermark_ms}
        return PatternWindows(self.spec, kept)

    def to_dict(self) -> dict[str, Any]:
        return {
            "size_ms": self.spec.size_ms,
            "step_ms": self.spec.step_ms,
            # JSON has no tuple keys: a sorted list of entries, stable for replay comparisons
            "windows": [
                {"pattern": p, "start": s, **stats.to_dict()} for (p, s), stats in sorted(self.windows.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PatternWindows:
        spec = WindowSpec(int(data["size_ms"]), None if data["step_ms"] is None else int(data["step_ms"]))
        windows = {(w["pattern"], int(w["start"])): RunningStats.from_dict(w) for w in data["windows"]}
        return cls(spec, windows)


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
