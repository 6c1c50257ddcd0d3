"""The difficulty curriculum, without Kafka: bands, unlocking, seeded picks, the task feed's rules."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic import ValidationError

from producers.generator.scheduler import Curriculum, CurriculumConfig, NoTasksError, TaskFeed, success_rates_from
from tests.generator_service.helpers import make_task

# Two easy patterns (band 0 < 0.4), one medium (0.4 <= d < 0.6), one hard (>= 0.6).
TASKS = {
    t["task_id"]: t
    for t in [
        make_task("e1", pattern="missing_colon", difficulty=0.1),
        make_task("e2", pattern="missing_colon", difficulty=0.2),
        make_task("e3", pattern="operator_swap", difficulty=0.35),
        make_task("m1", pattern="off_by_one", difficulty=0.5),
        make_task("h1", pattern="boundary_check_deleted", difficulty=0.7),
    ]
}
CFG = CurriculumConfig(band_edges=[0.4, 0.6], unlock_threshold=0.5)


def picked_ids(success: dict[str, float], n: int = 300, seed: int = 0) -> list[str]:
    curriculum, rng = Curriculum(CFG), random.Random(seed)
    return [curriculum.pick(TASKS, success, rng)["task_id"] for _ in range(n)]


def test_bands_follow_the_edges():
    curriculum = Curriculum(CFG)
    assert [curriculum.band_of(d) for d in (0.0, 0.39, 0.4, 0.59, 0.6, 1.0)] == [0, 0, 1, 1, 2, 2]


def test_only_easy_tasks_while_success_is_low():
    # Unreported patterns count as failing, so with no metrics at all only band 0 is open.
    for success in ({}, {"missing_colon": 0.9, "operator_swap": 0.05}):
        assert set(picked_ids(success)) == {"e1", "e2", "e3"}


def test_next_band_opens_once_the_mean_success_passes_the_threshold():
    # mean over the easy patterns: (0.6 + 0.4) / 2 = 0.5 >= 0.5 opens band 1, but band 1's
    # own pattern is at 0.0, so the mean over bands 0-1 is (0.6 + 0.4 + 0) / 3 < 0.5: band 2 stays shut.
    ids = picked_ids({"missing_colon": 0.6, "operator_swap": 0.4})
    assert set(ids) == {"e1", "e2", "e3", "m1"}
    # A pick chooses a band first, so the single medium task gets about half of the picks.
    assert 100 < Counter(ids)["m1"] < 200


def test_every_band_opens_when_all_patterns_succeed():
    success = {"missing_colon": 0.8, "operator_swap": 0.7, "off_by_one": 0.6}
    assert set(picked_ids(success)) == set(TASKS)


def test_just_below_the_threshold_keeps_the_band_shut():
    assert "m1" not in picked_ids({"missing_colon": 0.6, "operator_swap": 0.39})


def test_an_empty_easy_band_does_not_block_harder_ones():
    only_hard = {k: v for k, v in TASKS.items() if k in ("m1", "h1")}
    assert set(Curriculum(CFG).pick(only_hard, {}, random.Random(s))["task_id"] for s in range(20)) == {"m1"}


def test_picks_are_reproducible_with_a_seed_and_ignore_dict_order():
    success = {"missing_colon": 0.6, "operator_swap": 0.4}
    reordered = dict(reversed(list(TASKS.items())))
    curriculum = Curriculum(CFG)
    a = [curriculum.pick(TASKS, success, rng)["task_id"] for rng in [random.Random(7)] for _ in range(50)]
    b = [curriculum.pick(reordered, success, rng)["task_id"] for rng in [random.Random(7)] for _ in range(50)]
    assert a == b
    assert a != picked_ids(success, n=50, seed=8)


def test_empty_task_set_is_a_typed_error():
    with pytest.raises(NoTasksError):
        Curriculum(CFG).pick({}, {}, random.Random(0))


@pytest.mark.parametrize("edges", [[0.6, 0.4], [0.0, 0.5], [0.5, 1.0], [0.5, 0.5]])
def test_band_edges_must_increase_inside_the_unit_interval(edges):
    with pytest.raises(ValidationError):
        CurriculumConfig(band_edges=edges)


def test_success_rates_are_read_from_prefixed_metric_keys():
    assert success_rates_from({"success_rate/off_by_one": 0.25, "loss": 3.0, "success_rate": 0.9}) == {
        "off_by_one": 0.25
    }


def test_task_feed_keeps_train_tasks_and_the_latest_success_rate():
    feed = TaskFeed.__new__(TaskFeed)  # the record rules only; no consumer
    feed.tasks_topic, feed.metrics_topic, feed.tasks_by_id, feed.success_rates = "tasks", "metrics", {}, {}
    feed.apply("tasks", "Task", make_task("a"))
    feed.apply("tasks", "Task", make_task("b", split="heldout"))
    feed.apply("metrics", "Metric", {"values": {"success_rate/operator_swap": 0.2, "success_rate/off_by_one": 0.1}})
    feed.apply("metrics", "Metric", {"values": {"success_rate/operator_swap": 0.7}})
    assert set(feed.tasks_by_id) == {"a"}
    assert feed.success_rates == {"operator_swap": 0.7, "off_by_one": 0.1}
    feed.apply("tasks", "Task", make_task("a", split="validation"))  # moved out of train
    assert feed.tasks_by_id == {}


def test_an_excluded_advantage_counts_its_group_as_scored_but_not_its_task_rate():
    from producers.generator.frontier import TaskRates
    from producers.generator.service import LearnerFeed

    feed = LearnerFeed.__new__(LearnerFeed)  # the record rules only; no consumer
    feed.policy_topic, feed.scored_topic, feed.metrics_topic, feed.config_id = "policy", "adv", "metrics", "c"
    feed.scored_groups, feed.task_rates, feed.dropped_groups = set(), TaskRates(8), 0
    feed.apply("adv", "Advantage", {"group_id": "g", "rollout_id": "g-0", "task_id": "t", "reward_raw": 1.0})
    feed.apply("adv", "Advantage", {"group_id": "g", "rollout_id": "g-1", "task_id": "t", "reward_raw": 0.0,
                                    "excluded": True})
    feed.apply("adv", "Advantage", {"group_id": "h", "rollout_id": "h-0", "task_id": "u", "reward_raw": 0.0,
                                    "excluded": True})
    assert feed.scored_groups == {"g", "h"}  # no longer in flight: back-pressure does not wait for them
    assert feed.task_rates.rate("t") == 1.0 and feed.task_rates.samples("t") == 1
    assert feed.task_rates.rate("u") is None
