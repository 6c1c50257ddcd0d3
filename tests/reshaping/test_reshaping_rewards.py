import math

import pytest

from streams.reshaping.config import OutcomeConfig, ProgressConfig, RewardsConfig, WeightsConfig
from streams.reshaping.rewards import (
    enhanced_reward,
    outcome_tier,
    r_hack,
    r_outcome,
    r_precision,
    r_progress,
    r_style,
    r_test,
    reward_raw,
    weights_at,
)
from streams.reshaping.stats import FailureHistory


def test_r_test_mean_and_median_of_repeats():
    assert r_test([0.5, 1.0, 0.0]) == 0.5
    assert r_test([0.0, 1.0, 1.0], "mean") == pytest.approx(2 / 3)
    assert r_test([0.0, 1.0, 1.0], "median") == 1.0
    assert r_test([0.25, 0.75], "median") == 0.5
    assert reward_raw([0.0, 1.0, 1.0]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        r_test([])


def test_r_precision():
    assert r_precision(0.0, 3.0) == 1.0
    assert r_precision(0.2, 3.0) == pytest.approx(0.5488116360940264)  # exp(-0.6)
    assert r_precision(1.0, 0.0) == 1.0
    assert r_precision(0.2, 3.0, gate=0.5) == pytest.approx(0.5 * math.exp(-0.6))
    assert r_precision(0.0, 3.0, gate=0.0) == 0.0


def test_r_style_classes():
    cfg = RewardsConfig()  # clean 0.05, autofix 0, logical -0.2, unparsable -0.5
    assert [r_style(c, cfg) for c in ("clean", "autofix", "logical", "unparsable")] == [0.05, 0.0, -0.2, -0.5]
    with pytest.raises(ValueError, match="style_class"):
        r_style("pretty", cfg)


def test_r_hack_sums_distinct_flags():
    cfg = RewardsConfig()
    assert r_hack([], cfg) == 0.0
    # each distinct flag counts once: -1.0 (catch_all_except) - 1.0 (process_exit)
    assert r_hack(["catch_all_except", "process_exit", "catch_all_except"], cfg) == pytest.approx(-2.0)
    assert r_hack(["brand_new_hack"], cfg) == -1.0  # an unknown flag costs the default penalty
    custom = RewardsConfig(hack_penalties={"process_exit": 2.0}, unknown_hack_penalty=0.25)
    assert r_hack(["process_exit", "dead_code"], custom) == pytest.approx(-2.25)


def _outcome_fb(runs, error_kind="none", kinds=(), style_class="clean"):
    return {"pass_fraction_runs": runs, "error_kind": error_kind, "style_class": style_class,
            "test_outcomes": [{"error_kind": k} for k in kinds]}


@pytest.mark.parametrize(("fb", "tier"), [
    (_outcome_fb([0.0], "syntax", style_class="unparsable"), 0.0),
    (_outcome_fb([0.0], "import", ["import", "import"]), 0.1),
    (_outcome_fb([0.0], "crash", ["crash", "timeout", "memory"]), 0.2),
    (_outcome_fb([0.0], "timeout"), 0.2),  # a loop that never let a test report
    (_outcome_fb([0.0], "crash", ["crash", "wrong_answer"]), 0.3),  # ran, one answer wrong: not a crash on every test
    (_outcome_fb([0.0], "wrong_answer", ["wrong_answer"] * 2), 0.3),
    (_outcome_fb([0.5], "wrong_answer", ["none", "wrong_answer"]), 0.4 + 0.6 * 0.5),
    (_outcome_fb([1.0]), 1.0),
])
def test_layered_tiers(fb, tier):
    assert outcome_tier(fb, fb["pass_fraction_runs"][0], OutcomeConfig()) == pytest.approx(tier)
    assert r_outcome(fb, OutcomeConfig(kind="layered")) == pytest.approx(tier)


def test_layered_ladder_is_ordered_and_partial_stays_below_all_pass():
    cfg = OutcomeConfig(kind="layered")
    almost = _outcome_fb([0.99], "wrong_answer", ["wrong_answer"])
    assert r_outcome(almost, cfg) < cfg.all_pass
    with pytest.raises(ValueError, match="must not decrease"):
        OutcomeConfig(crash_all=0.05)


def test_binary_and_pass_fraction_outcomes():
    assert r_outcome(_outcome_fb([0.75]), OutcomeConfig(kind="binary")) == 0.0
    assert r_outcome(_outcome_fb([1.0, 1.0]), OutcomeConfig(kind="binary")) == 1.0
    assert r_outcome(_outcome_fb([1.0, 0.0, 1.0]), OutcomeConfig(kind="binary", repeats_average="median")) == 1.0
    assert r_outcome(_outcome_fb([0.75]), OutcomeConfig()) == 0.75


def test_weights_constant_ignore_the_clock():
    cfg = WeightsConfig(test=1.0, precision=0.1, style=0.2, hack=0.7, progress=0.3, robust=0.4, exec=0.05)
    want = {"test": 1.0, "precision": 0.1, "style": 0.2, "hack": 0.7, "progress": 0.3, "robust": 0.4, "exec": 0.05}
    assert weights_at(cfg, 0) == weights_at(cfg, 10_000) == want


@pytest.mark.parametrize(
    ("clock", "precision", "style", "progress"),
    [(0, 0.1, 0.0, 0.2), (100, 0.1, 0.0, 0.2), (200, 0.2, 0.25, 0.15), (300, 0.3, 0.5, 0.1), (5000, 0.3, 0.5, 0.1)],
)
def test_linear_ramp_start_middle_end(clock, precision, style, progress):
    cfg = WeightsConfig(test=1.0, precision=0.1, style=0.0, progress=0.2, schedule="linear", ramp_start=100,
                        ramp_steps=200, end={"precision": 0.3, "style": 0.5, "progress": 0.1})
    w = weights_at(cfg, clock)
    assert (w["test"], w["hack"]) == (1.0, 1.0)  # not named in end: constant
    assert (w["precision"], w["style"], w["progress"]) == pytest.approx((precision, style, progress))


def test_enhanced_reward_is_the_weighted_sum():
    c = {"test": 0.5, "precision": 0.8, "style": -0.2, "hack": -1.0, "progress": 1.0, "robust": 0.5, "exec": 0.25}
    w = {"test": 1.0, "precision": 0.5, "style": 2.0, "hack": 0.5, "progress": 0.1, "robust": 0.3, "exec": 0.2}
    assert enhanced_reward(c, w) == pytest.approx(0.5 + 0.4 - 0.4 - 0.5 + 0.1 + 0.15 + 0.05)


def _history(*outcomes):
    return FailureHistory(tuple((i, fixed) for i, fixed in enumerate(outcomes)))


def test_r_progress_needs_a_fix_of_a_failing_pattern():
    cfg = ProgressConfig(bonus=0.5, window_kind="events", window=10, min_failures=3)
    failing = {"off_by_one": _history(False, False, False)}
    assert r_progress(True, "off_by_one", failing, cfg) == 0.5
    assert r_progress(False, "off_by_one", failing, cfg) == 0.0
    assert r_progress(True, "wrong_operator", failing, cfg) == 0.0  # never seen: not failing
    assert r_progress(True, "off_by_one", {"off_by_one": _history(False, False)}, cfg) == 0.0
    # the last fix resets the count: only two failures since
    recovered = {"off_by_one": _history(False, False, False, True, False, False)}
    assert r_progress(True, "off_by_one", recovered, cfg) == 0.0
    # failures beyond the window do not count
    narrow = ProgressConfig(bonus=0.5, window_kind="events", window=2, min_failures=3)
    assert r_progress(True, "off_by_one", failing, narrow) == 0.0
