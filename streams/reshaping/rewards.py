"""Component rewards and their weighted sum, ``R = sum_c w_c R_c`` over ``COMPONENTS``.
Pure functions of one rollout's feedback; components and weights travel as maps keyed by
component name, so a new component needs no schema change."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from streams.reshaping.config import COMPONENTS, OutcomeConfig, ProgressConfig, RewardsConfig, WeightsConfig
from streams.reshaping.stats import FailureHistory

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


def r_outcome(fb: Mapping[str, Any], cfg: OutcomeConfig) -> float:
    """R_test under the configured outcome: pass fraction, tier or binary."""
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
