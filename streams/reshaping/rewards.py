"""Component rewards and their weighted sum, ``R = w_test R_test + w_precision R_precision
+ w_style R_style + w_progress R_progress``. Pure functions of one rollout's feedback."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from streams.reshaping.config import ProgressConfig, RewardsConfig, WeightsConfig
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


def r_precision(distance: float, lam: float, gate: float = 1.0) -> float:
    """``gate * exp(-lam d)``: small, focused edits (d near 0) score near 1.

    ``gate`` is 1 for the plain formula; the pipeline passes R_test under
    ``precision_gate: r_test`` so that closeness only counts for code that passes tests.
    """
    return gate * math.exp(-lam * distance)


def r_style(style_class: str, hack_flags: Iterable[str], cfg: RewardsConfig) -> float:
    """Reward of the style class minus the cost of each distinct hack flag.

    A flag missing from ``cfg.hack_penalties`` costs ``cfg.unknown_hack_penalty``, so a
    detector added later is penalised before anyone tunes its cost.
    """
    by_class = {
        "clean": cfg.style_clean,
        "autofix": cfg.style_autofix,
        "logical": cfg.style_logical,
        "unparsable": cfg.style_unparsable,
    }
    if style_class not in by_class:
        raise ValueError(f"unknown style_class {style_class!r}, expected one of {STYLE_CLASSES}")
    cost = sum(cfg.hack_penalties.get(flag, cfg.unknown_hack_penalty) for flag in sorted(set(hack_flags)))
    return by_class[style_class] - cost


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


@dataclass(frozen=True)
class Weights:
    test: float
    precision: float
    style: float
    progress: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def weights_at(cfg: WeightsConfig, clock: int) -> Weights:
    """The weights at a clock value (policy version or step, see ``WeightsConfig.clock``).

    Linear schedule: ``w = start + (end - start) * clamp((clock - ramp_start) / ramp_steps, 0, 1)``
    for precision and style; test and progress weights are constant.
    """
    if cfg.schedule == "constant":
        return Weights(cfg.w_test, cfg.w_precision, cfg.w_style, cfg.w_progress)
    progress = min(max((clock - cfg.ramp_start) / cfg.ramp_steps, 0.0), 1.0)
    return Weights(
        test=cfg.w_test,
        precision=cfg.w_precision + (cfg.w_precision_end - cfg.w_precision) * progress,
        style=cfg.w_style + (cfg.w_style_end - cfg.w_style) * progress,
        progress=cfg.w_progress,
    )


@dataclass(frozen=True)
class Components:
    r_test: float
    r_precision: float
    r_style: float
    r_progress: float


def enhanced_reward(c: Components, w: Weights) -> float:
    """``sum_i w_i R_i``."""
    return w.test * c.r_test + w.precision * c.r_precision + w.style * c.r_style + w.progress * c.r_progress
