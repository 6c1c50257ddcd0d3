"""The same feedback replayed under several reshaping configs, without retraining.

Advantages are computed with the pure core `streams.reshaping.pipeline.reshape_group`
over stored feedback (grouped by group_id, groups in event order), so every config sees
exactly the same samples. Two numbers per config:
  zero_variance_share   groups whose advantages are all equal: no learning signal at all
  advantage_success_corr Pearson correlation of advantage and "passed every test"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from producers.evaluation.metrics import correlation
from streams.reshaping.config import ReshapingConfig
from streams.reshaping.pipeline import ReshapeState, reshape_group


@dataclass(frozen=True)
class AdvantageStats:
    config_name: str
    config_id: str
    groups: int
    samples: int
    zero_variance_share: float
    advantage_success_corr: float | None


def group_in_order(feedbacks: Sequence[dict]) -> list[list[dict]]:
    """Feedback grouped by group_id, groups ordered by their first record."""
    groups: dict[str, list[dict]] = {}
    for fb in feedbacks:
        groups.setdefault(fb["group_id"], []).append(fb)
    return list(groups.values())


def passed_all(fb: dict) -> bool:
    return fb.get("tests_total", 0) > 0 and min(fb["pass_fraction_runs"]) == 1.0


def replay_stats(feedbacks: Sequence[dict], cfg: ReshapingConfig, tolerance: float = 1e-9) -> AdvantageStats:
    """Reshape `feedbacks` (in event order) under `cfg` from a fresh state; summarise."""
    state = ReshapeState()
    zero, advantages, successes = 0, [], []
    groups = group_in_order(feedbacks)
    for step, group in enumerate(groups):
        records, state = reshape_group(group, state, cfg, step)
        values = [r["advantage"] for r in records]
        zero += max(values) - min(values) <= tolerance
        advantages.extend(values)
        successes.extend(float(passed_all(fb)) for fb in group)
    return AdvantageStats(cfg.name, cfg.config_id, len(groups), len(advantages),
                          zero / len(groups) if groups else 0.0, correlation(advantages, successes))


def compare_configs(feedbacks: Sequence[dict], configs: Sequence[ReshapingConfig]) -> list[AdvantageStats]:
    return [replay_stats(feedbacks, cfg) for cfg in configs]
