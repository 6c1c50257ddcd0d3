"""The same feedback replayed under several reshaping configs, without retraining.

Advantages are computed with the pure core of `streams.reshaping.pipeline` (score_group,
normalise_groups) over stored feedback (grouped by group_id, groups in event order), so
every config sees exactly the same samples. Under normalisation mode batch, every
`batch_groups` consecutive compared groups form a batch (stored feedback has no log time,
so no batch deadline applies). Records the reshaping excluded (environment failures,
groups too small to compare) count nowhere: no learner trains on them. Two numbers per
config, over the compared groups and records:
  zero_variance_share   groups whose advantages are all equal: no learning signal at all
  advantage_success_corr Pearson correlation of advantage and "passed every test"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from producers.evaluation.metrics import correlation
from streams.reshaping.config import ReshapingConfig
from streams.reshaping.pipeline import ReshapeState, ScoredGroup, normalise_groups, score_group


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
    batch_size = cfg.normalisation.batch_groups if cfg.normalisation.mode == "batch" else 1
    records_of: list[list[dict]] = []
    pending: list[ScoredGroup] = []
    for step, group in enumerate(group_in_order(feedbacks)):
        scored, state = score_group(group, state, cfg, step)
        if scored.compared:
            pending.append(scored)
        if len(pending) >= batch_size:
            released, state = normalise_groups(pending, state, cfg)
            records_of += released
            pending = []
    if pending:
        released, state = normalise_groups(pending, state, cfg)
        records_of += released
    passed = {fb["rollout_id"]: passed_all(fb) for fb in feedbacks}
    zero, advantages, successes = 0, [], []
    for records in records_of:
        kept = [r for r in records if not r["excluded"]]
        values = [r["advantage"] for r in kept]
        zero += max(values) - min(values) <= tolerance
        advantages.extend(values)
        successes.extend(float(passed[r["rollout_id"]]) for r in kept)
    return AdvantageStats(cfg.name, cfg.config_id, len(records_of), len(advantages),
                          zero / len(records_of) if records_of else 0.0, correlation(advantages, successes))


def compare_configs(feedbacks: Sequence[dict], configs: Sequence[ReshapingConfig]) -> list[AdvantageStats]:
    return [replay_stats(feedbacks, cfg) for cfg in configs]
