"""R_test: the share of hidden tests passing, and statistics over repeated runs.

Flaky tests are handled by running a candidate several times (the sandbox does that) and
averaging; `aggregate_repeats` says how much the runs disagreed.
"""

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams.signals.errors import SignalInputError

# One test's outcome: passed or not, a credit in [0, 1] for a test with checkpoints
# (3 of 4 checkpoints -> 0.75), or a decoded `TestOutcome` record with a `passed` field.
Outcome = bool | float | Mapping


def _credit(outcome: Outcome) -> float:
    if isinstance(outcome, Mapping):
        if "passed" not in outcome:
            raise SignalInputError(
                f"test outcome without a 'passed' field: {outcome!r}"
            )
        return 1.0 if outcome["passed"] else 0.0
    if isinstance(outcome, bool):
        return 1.0 if outcome else 0.0
    credit = float(outcome)
    if not 0.0 <= credit <= 1.0:
        raise SignalInputError(f"partial credit must lie in [0, 1], got {credit}")
    return credit


def pass_fraction(
    outcomes: Sequence[Outcome], weights: Sequence[float] | None = None
) -> float:
    """Weighted mean credit of the tests, in [0, 1]; equal weights by default."""
    if not outcomes:
        raise SignalInputError(
            "no test outcomes: a task without tests cannot be scored"
        )
    credits = [_credit(o) for o in outcomes]
    if weights is None:
        return sum(credits) / len(credits)
    if len(weights) != len(credits):
        raise SignalInputError(f"{len(weights)} weights for {len(credits)} tests")
    if any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) <= 0:
        raise SignalInputError(
            f"weights must be finite, non-negative, not all zero: {weights}"
        )
    return sum(w * c for w, c in zip(weights, credits)) / sum(weights)


@dataclass(frozen=True, slots=True)
class RepeatStats:
    """Pass fraction over n runs of the same candidate."""

    mean: float
    std: (
        float  # population std: the runs are all there is, not a sample of a larger set
    )
    n: int
    flaky: bool  # runs disagree by more than the tolerance


def aggregate_repeats(
    pass_fractions: Sequence[float], flaky_tolerance: float = 0.0
) -> RepeatStats:
    """Mean, spread and flakiness of the pass fractions of repeated runs."""
    if not pass_fractions:
        raise SignalInputError("no runs to aggregate")
    if any(not 0.0 <= p <= 1.0 for p in pass_fractions):
        raise SignalInputError(
            f"pass fractions must lie in [0, 1]: {list(pass_fractions)}"
        )
    runs = [float(p) for p in pass_fractions]
    return RepeatStats(
        mean=statistics.fmean(runs),
        std=statistics.pstdev(runs),
        n=len(runs),
        flaky=max(runs) - min(runs) > flaky_tolerance,
    )
