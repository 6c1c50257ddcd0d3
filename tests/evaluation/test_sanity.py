"""The learning sanity check's pure core: which tasks it samples and when it passes."""

import pytest

from producers.evaluation.metrics import CandidateOutcome
from producers.evaluation.sanity import member_pass_fraction, sanity_summary, signal_task_ids


def fb(group: str, task: str, runs: list[float], **extra) -> dict:
    return {"group_id": group, "task_id": task, "pass_fraction_runs": runs, **extra}


def test_member_pass_fraction_averages_repeats_and_falls_back_to_counts():
    assert member_pass_fraction(fb("g", "t", [0.5, 1.0])) == 0.75
    assert member_pass_fraction({"tests_passed": 1, "tests_total": 4}) == 0.25
    assert member_pass_fraction({"tests_passed": 0, "tests_total": 0}) == 0.0


def test_signal_tasks_are_those_of_groups_whose_members_differ_most_groups_first():
    feedback = [
        fb("g1", "uniform", [0.0]), fb("g1", "uniform", [0.0]),      # all fail: no signal
        fb("g2", "once", [0.0]), fb("g2", "once", [1.0]),
        fb("g3", "twice", [0.5]), fb("g3", "twice", [1.0]),
        fb("g4", "twice", [0.0]), fb("g4", "twice", [0.25]),
        fb("g5", "a-tie", [1.0]), fb("g5", "a-tie", [0.0]),
    ]
    assert signal_task_ids(feedback, 10) == ["twice", "a-tie", "once"]
    assert signal_task_ids(feedback, 1) == ["twice"]


def test_a_member_the_environment_failed_compares_nothing():
    feedback = [fb("g1", "t", [0.0]), fb("g1", "t", [0.0]), fb("g1", "t", [1.0], environment_failure=True)]
    assert signal_task_ids(feedback, 5) == []


def test_limit_must_be_positive():
    with pytest.raises(ValueError):
        signal_task_ids([], 0)


def outcomes(task_passes: dict[str, list[bool]]) -> list[CandidateOutcome]:
    out = []
    for task, passes in task_passes.items():
        out.append(CandidateOutcome(task, "p", True, passes[0], float(passes[0]), 0.0, "clean"))
        out += [CandidateOutcome(task, "p", False, ok, float(ok), 0.0, "clean") for ok in passes]
    return out


def test_raised_when_the_paired_interval_lies_above_zero():
    tasks = [f"t{i}" for i in range(30)]
    base = outcomes({t: [False, False, False, False] for t in tasks})
    trained = outcomes({t: [True, True, False, False] for t in tasks})
    summary = sanity_summary(base, trained, resamples=2000)
    assert summary["tasks"] == 30
    assert summary["sample_pass_rate_base"] == 0.0 and summary["sample_pass_rate_trained"] == 0.5
    assert summary["sample_pass_rate_difference"]["low"] > 0
    assert summary["raised"] is True
    assert summary["greedy_mcnemar"]["only_trained"] == 30


def test_not_raised_when_trained_is_no_better_or_mixed():
    tasks = [f"t{i}" for i in range(30)]
    same = outcomes({t: [True, False, False, False] for t in tasks})
    assert sanity_summary(same, same, resamples=2000)["raised"] is False
    mixed = outcomes({t: ([True, True, True, True] if i % 2 else [False] * 4) for i, t in enumerate(tasks)})
    flipped = outcomes({t: ([False] * 4 if i % 2 else [True, True, True, True]) for i, t in enumerate(tasks)})
    summary = sanity_summary(mixed, flipped, resamples=2000)
    assert summary["sample_pass_rate_difference"]["low"] < 0 < summary["sample_pass_rate_difference"]["high"]
    assert summary["raised"] is False


def test_greedy_only_reports_are_refused():
    greedy_only = [CandidateOutcome("t", "p", True, True, 1.0, 0.0, "clean")]
    with pytest.raises(ValueError, match="sampled"):
        sanity_summary(greedy_only, greedy_only)
