import statistics

import pytest

from producers.evaluation.advantage_compare import compare_configs, group_in_order
from streams.reshaping.config import config_from_dict, load_preset


def fb(group, index, fraction, t):
    return {"event_id": f"e-{group}-{index}", "created_at_ms": t, "rollout_id": f"{group}-{index}", "group_id": group,
            "task_id": f"task-{group}", "bug_pattern": "off_by_one", "sample_index": index, "group_size": 2,
            "policy_version": 0, "pass_fraction_runs": [fraction], "tests_total": 2, "tree_edit_distance": 0.1,
            "style_class": "clean", "hack_flags": [], "fixed_pattern": "off_by_one" if fraction == 1.0 else "",
            "prompt_token_ids": [1], "completion_token_ids": [2], "behaviour_logprobs": [-0.5], "finish_reason": "stop"}


# group a: both fail (no signal under raw); group b: one full fix, one half
FEEDBACK = [fb("a", 0, 0.0, 1), fb("b", 0, 1.0, 2), fb("a", 1, 0.0, 3), fb("b", 1, 0.5, 4)]


def test_groups_keep_event_order():
    assert [[r["rollout_id"] for r in g] for g in group_in_order(FEEDBACK)] == [["a-0", "a-1"], ["b-0", "b-1"]]


def test_raw_replay_hand_computed():
    (raw,) = compare_configs(FEEDBACK, [load_preset("raw")])
    assert raw.groups == 2 and raw.samples == 4
    assert raw.zero_variance_share == pytest.approx(0.5)
    # advantages a: 0, 0; b: +1, -1 (population std); successes 0, 0, 1, 0
    assert raw.advantage_success_corr == pytest.approx(0.8164965809, rel=1e-6)


def test_two_configs_see_the_same_samples():
    stats = compare_configs(FEEDBACK, [load_preset("raw"), load_preset("full")])
    assert [s.config_name for s in stats] == ["raw", "full"] and {s.samples for s in stats} == {4}
    assert stats[0].config_id != stats[1].config_id


def test_excluded_records_and_uncompared_groups_count_nowhere():
    failed = {**fb("c", 0, 0.0, 5), "environment_failure": True}  # c keeps one member: not compared
    (raw,) = compare_configs(FEEDBACK + [failed, fb("c", 1, 1.0, 6)], [load_preset("raw")])
    assert raw.groups == 2 and raw.samples == 4
    assert raw.advantage_success_corr == pytest.approx(0.8164965809, rel=1e-6)


def test_batch_mode_normalises_consecutive_groups_together():
    data = load_preset("raw").model_dump(mode="json")
    data["normalisation"].update(mode="batch", batch_groups=2)
    (batch,) = compare_configs(FEEDBACK, [config_from_dict(data)])
    # one batch of both groups: rewards 0, 0 | 1, 0.5, centred on the batch mean 0.375 (one
    # scale for all, so it cancels in a correlation); group a stays uniform, now below zero
    assert batch.zero_variance_share == pytest.approx(0.5)
    expected = statistics.correlation([-0.375, -0.375, 0.625, 0.125], [0.0, 0.0, 1.0, 0.0])
    assert batch.advantage_success_corr == pytest.approx(expected, rel=1e-6)
    (group,) = compare_configs(FEEDBACK, [load_preset("raw")])
    assert batch.advantage_success_corr != pytest.approx(group.advantage_success_corr, rel=1e-3)
