import json

import numpy as np
import pytest

from streams.reshaping.stats import (
    EmaBaseline,
    FailureHistory,
    RunningStats,
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
