"""Component rewards and their weighted sum, ``R = sum_c w_c R_c`` over ``COMPONENTS``.
Pure functions of one rollout's feedback; components and weights travel as maps keyed by
component name, so a new component needs no schema change."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from streams.reshaping.config import (
    COMPONENTS,
    OutcomeConfig,
    ProgressConfig,
    RewardsConfig,
    RobustnessConfig,
    WeightsConfig,
)
from streams.reshaping.stats import FailureHistory
from streams.signals.robustness import reference_agreement, rename_outcome

STYLE_CLASSES = ("clean", "autofix", "logical", "unparsable")


def reward_raw(pass_fractions: Sequence[float]) -> float:
    """The plain weak signal: mean pass fraction over the repeats."""
    if not pass_fractions:
        raise ValueError("no pass fractions")
    return statistics.fmean(pass_fractions)


def r_test(pass_fractions: Sequence[float], average: Literal["mean", "median"] = "mean") -> float:
    """Pass fraction in [0, 1], averaged over repeated runs of a flaky candidate."""
    if not pass_fractions:
        raise ValueError("no pass fractions")
    return statistics.median(pass_fractions) if average == "median" else statistics.fmean(pass_fractions)


# error kinds of a run that never got to answer a test (streams/sandbox/models.py ErrorKind)
_CRASH_KINDS = frozenset({"crash", "timeout", "memory"})


def outcome_tier(fb: Mapping[str, Any], fraction: float, cfg: OutcomeConfig) -> float:
    """The layered outcome of one rollout (see ``OutcomeConfig``): its tier, or the partial
    pass's place between ``partial`` and ``all_pass``. ``fraction`` is the averaged pass
    fraction of its repeats."""
    if fraction >= 1.0:
        return cfg.all_pass
    if fraction > 0.0:
        return cfg.partial + (cfg.all_pass - cfg.partial) * fraction
    kind = fb.get("error_kind", "")
    if kind == "syntax" or fb.get("style_class") == "unparsable":
        return cfg.unparsable
    if kind == "import":
        return cfg.load_error
    outcomes = fb.get("test_outcomes") or []
    # every test crashed: the run-level kind says so when no per-test outcome came back
    if all(o["error_kind"] in _CRASH_KINDS for o in outcomes) and (outcomes or kind in _CRASH_KINDS):
        return cfg.crash_all
    return cfg.wrong


def r_outcome(fb: Mapping[str, Any], cfg: OutcomeConfig, fraction: float | None = None) -> float:
    """R_test under the configured outcome: pass fraction, tier or binary. ``fraction``: the
    pass fraction to place (an ensemble's combined outcome); default the averaged repeats."""
    if fraction is None:
        fraction = r_test(fb["pass_fraction_runs"], cfg.repeats_average)
    if cfg.kind == "binary":
        return 1.0 if fraction >= 1.0 else 0.0
    if cfg.kind == "layered":
        return outcome_tier(fb, fraction, cfg)
    return fraction


def r_precision(distance: float, lam: float, gate: float = 1.0) -> float:
    """``gate * exp(-lam d)``: small, focused edits (d near 0) score near 1.

    ``gate`` is 1 for the plain formula; the pipeline passes R_test under
    ``precision_gate: r_test`` so that closeness only counts for code that passes tests.
    """
    return gate * math.exp(-lam * distance)


def r_style(style_class: str, cfg: RewardsConfig) -> float:
    """The reward of the style class: a small bonus for clean code, a cost for logical issues."""
    by_class = {
        "clean": cfg.style_clean,
        "autofix": cfg.style_autofix,
        "logical": cfg.style_logical,
        "unparsable": cfg.style_unparsable,
    }
    if style_class not in by_class:
        raise ValueError(f"unknown style_class {style_class!r}, expected one of {STYLE_CLASSES}")
    return by_class[style_class]


def r_hack(hack_flags: Iterable[str], cfg: RewardsConfig) -> float:
    """Minus the cost of each distinct hack flag (0 for none). A flag missing from
    ``cfg.hack_penalties`` costs ``cfg.unknown_hack_penalty``, so a detector added later is
    penalised before anyone tunes its cost. Kept apart from R_style so that its weight
    alone decides how much a hack costs."""
    return -math.fsum(cfg.hack_penalties.get(flag, cfg.unknown_hack_penalty) for flag in sorted(set(hack_flags)))


def robustness_checks(fb: Mapping[str, Any]) -> dict[str, float]:
    """The outcome in [0, 1] of each robustness check that ran, by name: ``reference``, the
    share of random inputs where candidate and reference agree; ``rename``, 1 if the renamed
    variant passed as many hidden tests as the original, else 0 (streams/signals/robustness.py
    reads both from the record)."""
    readings = {"reference": reference_agreement(fb), "rename": rename_outcome(fb)}
    return {name: value for name, value in readings.items() if value is not None}


def r_robust(fb: Mapping[str, Any], fraction: float, cfg: RobustnessConfig) -> float:
    """``fraction * mean(checks that ran)``, ``fraction * cfg.unchecked`` when none ran.

    Gated by the pass fraction of the hidden tests (not by R_test, whose layered tiers pay
    failing code): code that agrees with the reference without passing tests, such as the
    buggy code itself, which agrees on most random inputs, or any candidate whose rename
    fails as many tests as the original, must earn nothing for it."""
    checks = robustness_checks(fb)
    return fraction * (statistics.fmean(checks.values()) if checks else cfg.unchecked)


def evaluator_outcomes(fb: Mapping[str, Any], fraction: float) -> dict[str, float]:
    """The outcome of each evaluator that ran, in [0, 1], by name: ``tests`` (the averaged
    pass fraction), ``reference`` (agreement share) and ``rename``, the renamed variant's
    pass fraction: the first run's when it passed as many tests, else 0 (a variant that does
    differently is not trusted for any count)."""
    checks = robustness_checks(fb)
    outcomes = {"tests": fraction}
    if "reference" in checks:
        outcomes["reference"] = checks["reference"]
    if "rename" in checks:
        outcomes["rename"] = fb["pass_fraction_runs"][0] * checks["rename"]
    return outcomes


def combine_evaluators(outcomes: Mapping[str, float], how: Literal["mean", "min", "vote"]) -> float:
    """The ensemble's outcome: the mean, the min, or the vote (the highest value a strict
    majority of the evaluators reach: the median of three, the lower of two)."""
    values = sorted(outcomes.values(), reverse=True)
    if how == "mean":
        return statistics.fmean(values)
    if how == "min":
        return values[-1]
    return values[len(values) // 2]


def r_exec(fb: Mapping[str, Any]) -> float:
    """``exec_line_coverage / tests_total``: the execution-path tie-breaker (see
    ``ExecConfig``). 0 when the candidate touches tracing APIs (its coverage is void) or
    when the judge saw no test pass (coverage counts only on passed tests)."""
    total = fb.get("tests_total", 0)
    if fb.get("exec_tracer_use") or total <= 0 or fb.get("tests_passed", 0) <= 0:
        return 0.0
    return fb.get("exec_line_coverage", 0.0) / total


def r_progress(
    fixed: bool,
    pattern: str,
    failure_history: Mapping[str, FailureHistory],
    cfg: ProgressConfig,
    now_ms: int | None = None,
) -> float:
    """One-time bonus for fully fixing a bug pattern the policy has been failing on recently.

    The pattern is *failing recently* when its history holds at least ``cfg.min_failures``
    failures inside the window since its newest fix. A full fix of such a pattern earns
    ``cfg.bonus``; anything else earns 0. The caller then records the fix in the history,
    which resets the count, so later fixes earn nothing until ``min_failures`` new
    failures accumulate. ``now_ms`` ends an event-time window (default: newest outcome).
    """
    if not fixed:
        return 0.0
    history = failure_history.get(pattern, FailureHistory())
    failures = history.failures_since_last_fix(cfg.window_kind, cfg.window, now_ms)
    return cfg.bonus if failures >= cfg.min_failures else 0.0


def weights_at(cfg: WeightsConfig, clock: int) -> dict[str, float]:
    """The weight of every component at a clock value (policy version or step, see
    ``WeightsConfig.clock``). Linear schedule, for each component named in ``cfg.end``:
    ``w = start + (end - start) * clamp((clock - ramp_start) / ramp_steps, 0, 1)``."""
    weights = cfg.start()
    if cfg.schedule == "constant":
        return weights
    progress = min(max((clock - cfg.ramp_start) / cfg.ramp_steps, 0.0), 1.0)
    for name, end in cfg.end.items():
        weights[name] += (end - weights[name]) * progress
    return weights


def enhanced_reward(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``sum_c w_c R_c`` over ``COMPONENTS``."""
    return math.fsum(weights[name] * components[name] for name in COMPONENTS)
