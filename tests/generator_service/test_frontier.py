"""Frontier selection: only tasks whose measured pass rate lies in the band, rates that move."""

import random

import pytest

from producers.generator.frontier import (FrontierConfig, TaskRates, band_sizes_by_pattern, frontier_band,
                                          pick_frontier)


def tasks(n):
    return {f"t{i}": {"task_id": f"t{i}", "bug_pattern": "off_by_one" if i % 2 else "operator_swap"}
            for i in range(n)}


def rates_of(outcomes: dict[str, list[bool]], window=16) -> TaskRates:
    rates = TaskRates(window)
    for task_id, passes in outcomes.items():
        for i, passed in enumerate(passes):
            rates.add(f"{task_id}-r{i}", task_id, passed)
    return rates


KNOWN = {"t0": [False] * 4, "t1": [True, False, False, False], "t2": [True] * 4, "t3": [True, True, False, False],
         "t4": [True, False]}  # t4: two samples, not measured yet; t5..t7: none


def test_band_holds_exactly_the_tasks_strictly_between_the_bounds():
    cfg = FrontierConfig(enabled=True, min_samples=4)
    band = frontier_band(tasks(8), rates_of(KNOWN), cfg)
    assert [t["task_id"] for t in band] == ["t1", "t3"]
    assert band_sizes_by_pattern(band) == {"off_by_one": 2}
    narrow = FrontierConfig(enabled=True, low=0.3, high=0.9)
    assert [t["task_id"] for t in frontier_band(tasks(8), rates_of(KNOWN), narrow)] == ["t3"]


def test_picks_come_from_the_band_or_measure_new_tasks():
    cfg = FrontierConfig(enabled=True, share=0.75, min_band=2)
    rng = random.Random(0)
    picks = [pick_frontier(tasks(8), rates_of(KNOWN), cfg, rng, fallback=lambda: pytest.fail("no fallback"))
             ["task_id"] for _ in range(400)]
    assert set(picks) <= {"t1", "t3", "t4", "t5", "t6", "t7"}  # never an all-fail or all-pass task
    band_share = sum(p in ("t1", "t3") for p in picks) / len(picks)
    assert 0.68 < band_share < 0.82


def test_a_band_smaller_than_min_band_gets_a_proportional_share():
    cfg = FrontierConfig(enabled=True, share=0.8, min_band=8)  # band of 2: share 0.8 * 2 / 8 = 0.2
    rng = random.Random(0)
    picks = [pick_frontier(tasks(8), rates_of(KNOWN), cfg, rng, fallback=lambda: pytest.fail("no fallback"))
             ["task_id"] for _ in range(1000)]
    band_share = sum(p in ("t1", "t3") for p in picks) / len(picks)
    assert 0.16 < band_share < 0.24


def test_with_nothing_left_to_measure_a_small_band_takes_every_pick():
    measured = {"t0": [False] * 4, "t1": [True, False, False, False]}
    cfg = FrontierConfig(enabled=True, min_band=8)
    picks = {pick_frontier(tasks(2), rates_of(measured), cfg, random.Random(i), fallback=lambda: pytest.fail("no"))
             ["task_id"] for i in range(50)}
    assert picks == {"t1"}


def test_with_everything_measured_and_an_empty_band_the_curriculum_picks():
    everything = {f"t{i}": [False] * 4 for i in range(3)}
    chosen = pick_frontier(tasks(3), rates_of(everything), FrontierConfig(enabled=True), random.Random(1),
                           fallback=lambda: {"task_id": "curriculum"})
    assert chosen["task_id"] == "curriculum"


def test_rates_follow_recent_samples_and_count_each_rollout_once():
    rates = rates_of({"t0": [False] * 4}, window=4)
    for i in range(3):
        rates.add(f"new{i}", "t0", True)
        rates.add(f"new{i}", "t0", True)  # delivered twice
    assert rates.samples("t0") == 4 and rates.rate("t0") == 0.75
    with pytest.raises(ValueError):
        FrontierConfig(low=0.6, high=0.5)
