"""The learning sanity check: did training raise success on the tasks it learnt from?

Before an experiment spends its budget, GRPO at that budget should at least raise the sampled
pass rate on the training tasks whose groups carried a signal (members' pass fractions
differ: a group that is all pass or all fail has zero advantages and teaches nothing). The
base model and the run's final policy each sample n repairs of every such task, at the
training temperature and with the run's prompt; the per-task difference of pass rates is
averaged and bootstrapped with the pairing kept. The check passes when that interval lies
above zero. The I/O (store, corpus, models) is in `reshaper sanity` (cli.py).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence

from producers.evaluation.metrics import CandidateOutcome, compare_paired


def member_pass_fraction(feedback: dict) -> float:
    """A rollout's pass fraction, its repeats averaged (the raw signal the groups compare)."""
    runs = feedback.get("pass_fraction_runs") or []
    if runs:
        return statistics.fmean(runs)
    total = feedback.get("tests_total") or 0
    return feedback.get("tests_passed", 0) / total if total else 0.0


def signal_task_ids(feedback: Sequence[dict], limit: int) -> list[str]:
    """Up to `limit` task ids of the groups that carried a signal, the tasks with the most such
    groups first (ties by task id, so the choice depends on the feedback alone). Rollouts the
    reshaping excluded for an environment failure compare nothing and are left out."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    groups: dict[str, list[dict]] = defaultdict(list)
    for fb in feedback:
        if not fb.get("environment_failure"):
            groups[fb["group_id"]].append(fb)
    signal: Counter[str] = Counter()
    for members in groups.values():
        if len({round(member_pass_fraction(m), 9) for m in members}) > 1:
            signal[members[0]["task_id"]] += 1
    ranked = sorted(signal, key=lambda task_id: (-signal[task_id], task_id))
    return ranked[:limit]


def sanity_summary(base: Sequence[CandidateOutcome], trained: Sequence[CandidateOutcome],
                   resamples: int = 10_000, seed: int = 0) -> dict:
    """Trained against base on the same tasks: the paired difference of the sampled pass rate
    (the check), of greedy success and of the mean pass fraction, with McNemar on greedy."""
    compared = compare_paired(base, trained, resamples=resamples, seed=seed)
    sampled = compared["sample_pass_rate"]
    if sampled is None:
        raise ValueError("the sanity check compares sampled repairs: evaluate with n >= 1 samples, not greedy only")

    def interval(d) -> dict:
        return {"mean": round(d.mean, 4), "low": round(d.low, 4), "high": round(d.high, 4)}

    mcnemar = compared["mcnemar_greedy"]
    return {"tasks": compared["tasks"],
            "sample_pass_rate_base": round(_sampled_rate(base), 4),
            "sample_pass_rate_trained": round(_sampled_rate(trained), 4),
            "sample_pass_rate_difference": interval(sampled),
            "greedy_difference": interval(compared["greedy"]),
            "pass_fraction_difference": interval(compared["pass_fraction"]),
            "greedy_mcnemar": {"only_base": mcnemar.only_a, "only_trained": mcnemar.only_b,
                               "p_value": round(mcnemar.p_value, 4)},
            "raised": sampled.low > 0}


def _sampled_rate(outcomes: Sequence[CandidateOutcome]) -> float:
    sampled = [o.passed for o in outcomes if not o.greedy]
    return sum(sampled) / len(sampled)
