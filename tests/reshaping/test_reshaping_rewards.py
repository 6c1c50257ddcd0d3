import math

import pytest

from streams.reshaping.config import ProgressConfig, RewardsConfig, WeightsConfig
from streams.reshaping.rewards import (
    Components,
    Weights,
    enhanced_reward,
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


def test_r_style_classes_and_hack_penalties():
    cfg = RewardsConfig()  # clean 0.05, autofix 0, logical -0.2, unparsable -0.5
    assert r_style("clean", [], cfg) == 0.05
    assert r_style("autofix", [], cfg) == 0.0
    assert r_style("unparsable", [], cfg) == -0.5
    # each distinct flag counts once: -0.2 - 0.5 (catch_all_except) - 1.0 (process_exit)
    assert r_style("logical", ["catch_all_except", "process_exit", "catch_all_except"], cfg) == pytest.approx(-1.7)
    # an unknown flag costs the default penalty
    assert r_style("clean", ["brand_new_hack"], cfg) == pytest.approx(0.05 - 0.5)
    custom = RewardsConfig(hack_penalties={"process_exit": 2.0}, unknown_hack_penalty=0.25)
    assert r_style("autofix", ["process_exit", "dead_code"], custom) == pytest.approx(-2.25)
    with pytest.raises(ValueError, match="style_class"):
        r_style("pretty", [], cfg)


def test_weights_constant_ignore_the_clock():
    cfg = WeightsConfig(w_test=1.0, w_precision=0.1, w_style=0.2, w_progress=0.3)
    assert weights_at(cfg, 0) == weights_at(cfg, 10_000) == Weights(1.0, 0.1, 0.2, 0.3)


@pytest.mark.parametrize(
    ("clock", "precision", "style"),
    [(0, 0.1, 0.0), (100, 0.1, 0.0), (200, 0.2, 0.25), (250, 0.25, 0.375), (300, 0.3, 0.5), (5000, 0.3, 0.5)],
)
def test_linear_ramp_start_middle_end(clock, precision, style):
    cfg = WeightsConfig(
        w_test=1.0,
        w_precision=0.1,
        w_style=0.0,
        w_progress=0.2,
        schedule="linear",
        ramp_start=100,
        ramp_steps=200,
        w_precision_end=0.3,
        w_style_end=0.5,
    )
    w = weights_at(cfg, clock)
    assert (w.test, w.progress) == (1.0, 0.2)
    assert w.precision == pytest.approx(precision)
    assert w.style == pytest.approx(style)


def test_enhanced_reward_is_the_weighted_sum():
    c = Components(r_test=0.5, r_precision=0.8, r_style=-0.2, r_progress=1.0)
    w = Weights(test=1.0, precision=0.5, style=2.0, progress=0.1)
    assert enhanced_reward(c, w) == pytest.approx(0.5 + 0.4 - 0.4 + 0.1)


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
