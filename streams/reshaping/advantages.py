"""From a group's enhanced rewards to advantages.

Order of operations, for every reward R of the group:

1. **normalise** — ``z = (R - centre) / (scale + eps)``:
   - mode ``group``: centre, scale = the group's mean and population std; this *is* the
     GRPO group advantage ``A_i = (R_i - mean_g) / std_g`` (``eps`` keeps std 0 finite);
   - mode ``batch``: the mean and population std of the rewards of one batch of groups,
     ``(R - mu_batch) / (sigma_batch + eps)`` (which groups form a batch is decided by the
     partition reshaper, ``streams/agents/batches.py``);
   - mode ``running``: the partition's running mean and std of every reward seen (this
     group included);
   - mode ``none``: ``z = R - centre`` with centre 0, no scaling.
   *Warm-up* replaces centre and scale by the slow global mean/std (``warmup_mode:
   global``) or divides the mode's centred reward by ``fixed_scale`` (``fixed``); when it
   applies depends on the mode (``NormalisationConfig`` says it field by field; ``period``
   below is the warm-up clock). ``relative_to_baseline`` replaces the centre by the EMA
   baseline, whatever the mode.
2. **amplify** ``z`` (none | tanh | power | sign_power);
3. **focus**: the excess above ``positive_threshold`` is multiplied by ``positive_boost``
   and the excess below ``negative_threshold`` by ``negative_damp`` (piecewise linear,
   so the order of the samples is kept);
4. **clip** to ``[low, high]`` last, so that whatever came before the learner never sees
   an advantage outside the bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from streams.reshaping.config import NormalisationConfig, TransformConfig
from streams.reshaping.stats import RunningStats


def group_stats(rewards: Sequence[float]) -> tuple[float, float]:
    """Mean and population std (ddof 0, so a group of one has std 0) of a group."""
    if not rewards:
        raise ValueError("empty group")
    if max(rewards) == min(rewards):  # exactly zero spread, whatever rounding would say
        return float(rewards[0]), 0.0
    # float two-pass formula: statistics.pstdev computes in Fractions, ~30% of a replay's time
    n = len(rewards)
    mean = math.fsum(rewards) / n
    return mean, math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / n)


@dataclass(frozen=True)
class Normalised:
    values: tuple[float, ...]
    warmup: bool
    centre: float
    scale: float
    group_mean: float
    group_std: float


def _in_warmup(scale: float, seen: int, period: int, cfg: NormalisationConfig) -> bool:
    """Whether the mode's scale gives way to the warm-up one (``NormalisationConfig``)."""
    young = seen < cfg.warmup_min_count
    tiny = scale < cfg.warmup_min_std
    if cfg.mode == "group":  # a uniform group after the first groups is an ordinary no-signal group
        return young or (tiny and period <= cfg.warmup_batches)
    if cfg.mode == "batch":
        return young or tiny or period <= cfg.warmup_batches
    return young or tiny


def normalise_batch(
    groups: Sequence[Sequence[float]],
    global_stats: RunningStats,
    baseline: float,
    cfg: NormalisationConfig,
    period: int = 1,
) -> list[Normalised]:
    """Step 1 for the rewards of several groups that share one centre and scale (mode
    ``batch``: the groups of a batch; the other modes: one group). ``global_stats`` and
    ``baseline`` must already include every group given. ``period`` is the warm-up clock:
    the 1-based number of this group among the compared groups (mode group) or of this
    batch among the batches (mode batch)."""
    if cfg.mode != "batch" and len(groups) != 1:
        raise ValueError(f"mode {cfg.mode} normalises one group at a time, got {len(groups)}")
    per_group = [group_stats(rewards) for rewards in groups]
    warmup = False
    if cfg.mode == "none":
        centre, scale = 0.0, None
    else:
        if cfg.mode == "running":
            centre, scale = global_stats.mean, global_stats.std
        else:  # group (one group) or batch: the statistics of every reward given
            centre, scale = group_stats([r for rewards in groups for r in rewards])
        warmup = _in_warmup(scale, global_stats.count, period, cfg)
        if warmup and cfg.warmup_mode == "global":
            centre, scale = global_stats.mean, global_stats.std
        elif warmup:
            scale = cfg.fixed_scale
    if cfg.relative_to_baseline:
        centre = baseline
    out = []
    for rewards, (group_mean, group_std) in zip(groups, per_group):
        if scale is None:
            values = tuple(r - centre for r in rewards)
        else:
            values = tuple((r - centre) / (scale + cfg.epsilon) for r in rewards)
        out.append(Normalised(values, warmup, centre, 1.0 if scale is None else scale, group_mean, group_std))
    return out


def normalise(
    rewards: Sequence[float], global_stats: RunningStats, baseline: float, cfg: NormalisationConfig, period: int = 1
) -> Normalised:
    """Step 1 for one group (in mode batch: a batch of this one group); as ``normalise_batch``."""
    return normalise_batch([rewards], global_stats, baseline, cfg, period)[0]


def amplify(z: float, cfg: TransformConfig) -> float:
    """Step 2: tanh(p z), z**p (p odd integer) or sign(z)|z|**p."""
    p = cfg.amplification_param
    try:
        if cfg.amplification == "tanh":
            return math.tanh(p * z)
        if cfg.amplification == "power":
            return z ** int(p)
        if cfg.amplification == "sign_power":
            return math.copysign(abs(z) ** p, z)
    except OverflowError:  # a huge z under a large power: the clip bounds it anyway
        return math.copysign(math.inf, z)
    return z


def focus(a: float, cfg: TransformConfig) -> float:
    """Step 3: up-weight clearly better samples, damp very negative ones."""
    if a > cfg.positive_threshold:
        return cfg.positive_threshold + cfg.positive_boost * (a - cfg.positive_threshold)
    if a < cfg.negative_threshold:
        return cfg.negative_threshold + cfg.negative_damp * (a - cfg.negative_threshold)
    return a


def clip(a: float, cfg: TransformConfig) -> float:
    """Step 4."""
    low, high = cfg.clip
    return min(max(a, low), high)


def transform(z: float, cfg: TransformConfig) -> float:
    """Steps 2-4 on one normalised reward: the advantage."""
    return clip(focus(amplify(z, cfg), cfg), cfg)
