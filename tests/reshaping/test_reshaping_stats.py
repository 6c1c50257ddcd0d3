import json

import numpy as np
import pytest

from streams.reshaping.stats import (
    EmaBaseline,
    FailureHistory,
    PatternWindows,
    RunningStats,
    WindowSpec,
    hopping_window_starts,
    tumbling_window_start,
)

SEQUENCE = [0.5, 1.0, 0.0, 0.25, 0.75, 0.75, -0.3, 2.0]


def test_welford_matches_numpy():
    s = RunningStats().update_many(SEQUENCE)
    assert s.count == 8
    assert s.mean == pytest.approx(np.mean(SEQUENCE), abs=1e-15)
    assert s.variance == pytest.approx(np.var(SEQUENCE), rel=1e-13)
    assert s.sample_variance == pytest.approx(np.var(SEQUENCE, ddof=1), rel=1e-13)
    assert s.std == pytest.approx(np.std(SEQUENCE), rel=1e-13)


def test_welford_small_counts_and_hand_values():
    assert RunningStats().std == 0.0 and RunningStats().variance == 0.0
    one = RunningStats().update(3.0)
    assert (one.count, one.mean, one.std, one.sample_variance) == (1, 3.0, 0.0, 0.0)
    two = one.update(5.0)  # mean 4, squared deviations 1 + 1
    assert (two.mean, two.m2, two.variance, two.sample_variance) == (4.0, 2.0, 1.0, 2.0)


def test_update_leaves_the_old_value_untouched():
    s = RunningStats().update(1.0)
    s.update(2.0)
    assert s == RunningStats(1, 1.0, 0.0)


def test_merge_equals_one_pass_over_the_union():
    left = RunningStats().update_many(SEQUENCE[:3])
    right = RunningStats().update_many(SEQUENCE[3:])
    merged = left.merge(right)
    whole = RunningStats().update_many(SEQUENCE)
    assert merged.count == whole.count
    assert merged.mean == pytest.approx(whole.mean, abs=1e-15)
    assert merged.m2 == pytest.approx(whole.m2, rel=1e-13)
    assert left.merge(RunningStats()) == left and RunningStats().merge(right) == right
    # hand example: {1, 3} with {5}: mean 3, m2 = 2 + 0 + (5-2)^2 * 2 * 1 / 3 = 8
    assert RunningStats().update_many([1, 3]).merge(RunningStats().update(5)) == RunningStats(3, 3.0, 8.0)


def test_running_stats_round_trip_through_json():
    s = RunningStats().update_many(SEQUENCE)
    assert RunningStats.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_ema_first_batch_initialises_then_decays():
    b = EmaBaseline()
    assert b.value is None
    b = b.update(0.4, beta=0.9)
    assert b.value == 0.4
    b = b.update(1.0, beta=0.9)
    assert b.value == pytest.approx(0.9 * 0.4 + 0.1 * 1.0)  # 0.46
    b = b.update(0.0, beta=0.9)
    assert b.value == pytest.approx(0.414)
    assert EmaBaseline.from_dict(b.to_dict()) == b
    assert EmaBaseline.from_dict(EmaBaseline().to_dict()) == EmaBaseline()


@pytest.mark.parametrize(("t", "start"), [(0, 0), (999, 0), (1000, 1000), (2500, 2000), (-1, -1000)])
def test_tumbling_window_start(t, start):
    assert tumbling_window_start(t, 1000) == start


@pytest.mark.parametrize(
    ("t", "starts"),
    [
        (1100, [250, 500, 750, 1000]),
        (1000, [250, 500, 750, 1000]),
        (999, [0, 250, 500, 750]),
        (0, [-750, -500, -250, 0]),
    ],
)
def test_hopping_window_starts(t, starts):
    assert hopping_window_starts(t, 1000, 250) == starts
    for s in starts:
        assert s <= t < s + 1000


def test_hopping_with_step_equal_size_is_tumbling_and_bad_specs_refused():
    for t in (0, 1, 999, 1000, 12345):
        assert hopping_window_starts(t, 1000, 1000) == [tumbling_window_start(t, 1000)]
    with pytest.raises(ValueError):
        hopping_window_starts(10, 1000, 2000)
    with pytest.raises(ValueError):
        tumbling_window_start(10, 0)


def test_pattern_windows_tumbling_accumulators():
    w = PatternWindows(WindowSpec(1000))
    for pattern, t, value in [("a", 100, 1.0), ("a", 900, 0.0), ("a", 1100, 0.5), ("b", 200, 0.25)]:
        w = w.update(pattern, t, value)
    assert w.get("a", 0) == RunningStats(2, 0.5, 0.5)
    assert w.get("a", 1000) == RunningStats(1, 0.5, 0.0)
    assert w.get("b", 0).mean == 0.25 and w.get("b", 1000).count == 0
    expired = w.expire(watermark_ms=1000)  # window [0, 1000) closed
    assert set(expired.windows) == {("a", 1000)}
    assert PatternWindows.from_dict(json.loads(json.dumps(w.to_dict()))) == w


def test_pattern_windows_hopping_counts_an_event_in_each_window():
    w = PatternWindows(WindowSpec(1000, 500)).update("a", 1200, 1.0).update("a", 1700, 0.0)
    # 1200 is in [500, 1500) and [1000, 2000); 1700 in [1000, 2000) and [1500, 2500)
    assert w.get("a", 500) == RunningStats(1, 1.0, 0.0)
    assert w.get("a", 1000) == RunningStats(2, 0.5, 0.5)
    assert w.get("a", 1500) == RunningStats(1, 0.0, 0.0)
    assert PatternWindows.from_dict(w.to_dict()) == w


def test_failure_history_event_window():
    h = FailureHistory().record([(1, False), (2, False), (3, True), (4, False), (5, False)], "events", 4)
    assert h.outcomes == ((2, False), (3, True), (4, False), (5, False))
    assert h.failures_since_last_fix("events", 4) == 2
    assert h.failures_since_last_fix("events", 1) == 1
    h = h.record([(6, False), (7, False), (8, False)], "events", 4)
    assert h.failures_since_last_fix("events", 4) == 4  # the fix fell out of the window
    assert FailureHistory.from_dict(json.loads(json.dumps(h.to_dict()))) == h


def test_failure_history_event_time_window():
    h = FailureHistory().record([(1000, False), (5000, True), (6000, False), (9000, False)], "ms", 5000)
    assert h.outcomes == ((5000, True), (6000, False), (9000, False))  # 1000 <= 9000 - 5000 dropped
    assert h.failures_since_last_fix("ms", 5000) == 2
    assert h.failures_since_last_fix("ms", 5000, now_ms=12_000) == 1  # window (7000, 12000]
    assert h.failures_since_last_fix("ms", 1000, now_ms=9000) == 1  # window (8000, 9000]
    assert FailureHistory().failures_since_last_fix("ms", 1000) == 0
