"""Pure metric math of an evaluation: pass@k, per-pattern aggregation, confidence intervals.

Nothing here runs code or reads files; `eval.py` turns sandbox results into
`CandidateOutcome`s and these functions turn those into numbers.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field


class MetricInputError(ValueError):
    """Counts or samples a metric cannot be computed from."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k) for n samples, c correct.

    The ratio of binomials is computed as the product prod_{i=n-c+1..n} (1 - k/i), which never
    forms the (huge) binomials themselves.
    """
    if n < 1 or not 0 <= c <= n or not 1 <= k <= n:
        raise MetricInputError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:  # every draw of k samples holds a correct one
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@dataclass(frozen=True)
class CandidateOutcome:
    """What the evaluator said about one candidate repair of one task."""

    task_id: str
    bug_pattern: str
    greedy: bool  # the greedy decode (success@1) or one of the n temperature samples (pass@k)
    passed: bool  # every hidden test passed
    pass_fraction: float
    tree_edit_distance: float  # normalised, buggy -> candidate
    style_class: str
    hack_flags: tuple[str, ...] = ()
    completion_text: str = ""
    error_kind: str = "none"  # the sandbox's error kind of the first test run (streams/sandbox ErrorKind)
    error_message: str = ""

    @property
    def flagged(self) -> bool:
        return bool(self.hack_flags)


@dataclass
class Metrics:
    """The evaluation numbers of one set of tasks (all of them, or one bug pattern)."""

    tasks: int
    candidates: int
    success_at_1: float | None  # share of tasks whose greedy repair passes every test
    pass_at_k: dict[int, float] = field(default_factory=dict)  # k -> mean unbiased pass@k over tasks
    mean_pass_fraction: float = 0.0  # over every candidate
    mean_tree_edit_distance_success: float | None = None  # over successful candidates only
    style_clean_share: float = 0.0  # candidates whose style class is "clean"
    hack_share: float = 0.0  # candidates with any hack flag
    hacked_success_share: float | None = None  # successful candidates with any hack flag

    def to_dict(self) -> dict:
        data = asdict(self)
        data["pass_at_k"] = {str(k): v for k, v in self.pass_at_k.items()}
        return data


def _mean(xs: Sequence[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def summarise(outcomes: Sequence[CandidateOutcome], ks: Iterable[int]) -> Metrics:
    """Metrics of `outcomes`. pass@k uses each task's sampled (non-greedy) candidates; a k
    larger than a task's sample count is an error rather than a silently smaller k."""
    if not outcomes:
        raise MetricInputError("no candidates to summarise")
    by_task: dict[str, list[CandidateOutcome]] = defaultdict(list)
    for o in outcomes:
        by_task[o.task_id].append(o)
    greedy = [o.passed for o in outcomes if o.greedy]
    pass_k: dict[int, float] = {}
    for k in sorted(set(ks)):
        per_task = []
        for task_id, cands in by_task.items():
            sampled = [o for o in cands if not o.greedy]
            if not sampled:
                continue
            per_task.append(pass_at_k(len(sampled), sum(o.passed for o in sampled), k))
        if per_task:
            pass_k[k] = statistics.fmean(per_task)
    successes = [o for o in outcomes if o.passed]
    return Metrics(
        tasks=len(by_task),
        candidates=len(outcomes),
        success_at_1=_mean([float(p) for p in greedy]),
        pass_at_k=pass_k,
        mean_pass_fraction=statistics.fmean(o.pass_fraction for o in outcomes),
        mean_tree_edit_distance_success=_mean([o.tree_edit_distance for o in successes]),
        style_clean_share=statistics.fmean(o.style_class == "clean" for o in outcomes),
        hack_share=statistics.fmean(o.flagged for o in outcomes),
        hacked_success_share=_mean([float(o.flagged) for o in successes]),
    )


def summarise_by_pattern(outcomes: Sequence[CandidateOutcome], ks: Iterable[int]) -> dict[str, Metrics]:
    """`summarise` per bug pattern, patterns in name order."""
    ks = list(ks)
    groups: dict[str, list[CandidateOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.bug_pattern].append(o)
    return {pattern: summarise(groups[pattern], ks) for pattern in sorted(groups)}


# Two-sided 95% Student-t quantiles t_{0.975, df}, df = 1..30 (standard tables). A table,
# because scipy is not a dependency and the standard library has only the normal quantile.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}; beyond the table the Cornish-Fisher expansion around z (error < 1e-3)."""
    if df < 1:
        raise MetricInputError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = statistics.NormalDist().inv_cdf(0.975)
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Interval:
    """mean ± half_width: a 95% Student-t interval over n values (half_width None when n = 1)."""

    mean: float
    half_width: float | None
    n: int

    def __str__(self) -> str:
        if self.half_width is None:
            return f"{self.mean:.3f} (n=1)"
        return f"{self.mean:.3f} ± {self.half_width:.3f}"


def t_interval(values: Sequence[float]) -> Interval:
    """95% t-interval of the mean: mean ± t_{0.975, n-1} s / sqrt(n); one value has no interval."""
    if not values:
        raise MetricInputError("no values for an interval")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Interval(mean, None, 1)
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Interval(mean, half, len(values))


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation; None when either side is constant (it is undefined there)."""
    if len(xs) != len(ys):
        raise MetricInputError(f"correlation of {len(xs)} and {len(ys)} values")
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return statistics.correlation(xs, ys)


# --- paired comparison of two arms on the same tasks -------------------------------------


@dataclass(frozen=True)
class PairedDifference:
    """mean(b - a) over tasks with a 95% percentile-bootstrap interval (tasks resampled)."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}] (n={self.n})"


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 10_000,
                     seed: int = 0) -> PairedDifference:
    """The per-task difference b - a, averaged, with the 2.5th and 97.5th percentiles of its
    mean over `resamples` bootstrap draws of the tasks (the pairing is kept: a task is drawn
    with both its values). Seeded, so a table is reproducible."""
    import numpy as np

    if len(a) != len(b):
        raise MetricInputError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    if not a:
        raise MetricInputError("no pairs to compare")
    if resamples < 1:
        raise MetricInputError(f"resamples must be >= 1, got {resamples}")
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return PairedDifference(float(diff.mean()), float(low), float(high), len(diff))


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test on paired successes: only_a and only_b are the discordant tasks."""

    only_a: int
    only_b: int
    p_value: float


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Two-sided exact McNemar test: under "no difference" each discordant task is a fair coin,
    so p = min(1, 2 * P[Binomial(n, 1/2) <= min(only_a, only_b)]) with n discordant tasks.
    Written out because scipy is not a dependency; it is one binomial tail."""
    if len(a) != len(b):
        raise MetricInputError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    only_a = sum(bool(x) and not bool(y) for x, y in zip(a, b))
    only_b = sum(bool(y) and not bool(x) for x, y in zip(a, b))
    n = only_a + only_b
    if n == 0:
        return McNemar(0, 0, 1.0)
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n
    return McNemar(only_a, only_b, min(1.0, 2 * tail))


def per_task_values(outcomes: Sequence[CandidateOutcome]) -> dict[str, dict[str, float]]:
    """Per task: greedy success (0/1), the pass rate of its samples and the mean pass fraction
    of all its candidates; the inputs of the paired comparison."""
    by_task: dict[str, list[CandidateOutcome]] = defaultdict(list)
    for o in outcomes:
        by_task[o.task_id].append(o)
    values = {}
    for task_id, cands in by_task.items():
        greedy = [o for o in cands if o.greedy]
        sampled = [o for o in cands if not o.greedy]
        values[task_id] = {"greedy": float(any(o.passed for o in greedy)),
                           "sample_pass_rate": _mean([float(o.passed) for o in sampled]),  # None: greedy only
                           "pass_fraction": statistics.fmean(o.pass_fraction for o in cands)}
    return values


def compare_paired(a: Sequence[CandidateOutcome], b: Sequence[CandidateOutcome], resamples: int = 10_000,
                   seed: int = 0) -> dict:
    """Arm b against arm a on the tasks both were evaluated on: bootstrap intervals of the
    per-task differences (greedy success, sample pass rate, pass fraction) and McNemar on
    greedy successes. The sample pass rate is None unless every shared task has sampled
    candidates in both arms (a greedy-only evaluation has none)."""
    va, vb = per_task_values(a), per_task_values(b)
    shared = sorted(set(va) & set(vb))
    if not shared:
        raise MetricInputError("the two arms share no task")
    result = {"tasks": len(shared)}
    for key in ("greedy", "sample_pass_rate", "pass_fraction"):
        xa, xb = [va[t][key] for t in shared], [vb[t][key] for t in shared]
        result[key] = None if None in xa or None in xb else paired_bootstrap(xa, xb, resamples, seed)
    result["mcnemar_greedy"] = mcnemar_exact([va[t]["greedy"] > 0 for t in shared],
                                             [vb[t]["greedy"] > 0 for t in shared])
    return result


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order: the i-th smallest p times
    (m - i + 1), made monotone and capped at 1. Reject at level alpha where adjusted <= alpha.
    Written out because no statistics library is a dependency; it is a sort and a running max."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def mcnemar_pairs_needed(difference: float, discordant: float, alpha: float, power: float) -> float:
    """Pairs a two-sided McNemar test at `alpha` needs to detect a difference of paired success
    proportions `difference` with `power`, when a share `discordant` of pairs disagree (Connor
    1987, normal approximation): [z_(1-alpha/2) sqrt(psi) + z_power sqrt(psi - d^2)]^2 / d^2."""
    if not 0 < abs(difference) <= discordant <= 1:
        raise MetricInputError(f"need 0 < |difference| <= discordant <= 1, got {difference}, {discordant}")
    z = statistics.NormalDist()
    za, zb = z.inv_cdf(1 - alpha / 2), z.inv_cdf(power)
    d = abs(difference)
    return (za * math.sqrt(discordant) + zb * math.sqrt(discordant - d * d)) ** 2 / (d * d)


def mcnemar_detectable_difference(pairs: int, discordant: float, alpha: float, power: float = 0.8) -> float:
    """The smallest difference of paired success proportions that `pairs` pairs detect with
    `power` at two-sided `alpha` (inverse of `mcnemar_pairs_needed`, by bisection: the pairs
    needed fall as the difference grows); `discordant` itself when even that is out of reach."""
    low, high = 1e-9, discordant
    if mcnemar_pairs_needed(high, discordant, alpha, power) > pairs:
        return discordant
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if mcnemar_pairs_needed(mid, discordant, alpha, power) > pairs else (low, mid)
    return high
