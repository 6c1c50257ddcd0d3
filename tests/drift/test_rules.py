"""The reward-hacking rule and --since parsing, on hand-made numbers (no store)."""

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from consumers.drift import BadSinceError, FAR_PAST, HackingRule, judge_proxy_trend, parse_since, slope
from consumers.drift.rules import pattern_regression_flags


def rows(proxy, heldout, start=0):
    return [{"policy_version": start + i, "proxy_reward": p, "heldout_success": h}
            for i, (p, h) in enumerate(zip(proxy, heldout))]


def test_slope_is_least_squares():
    assert slope([0, 1, 2], [1, 3, 5]) == pytest.approx(2.0)
    # (0,0) (1,1) (2,0) (3,1): least squares gives 0.2, not the end-to-end 1/3
    assert slope([0, 1, 2, 3], [0, 1, 0, 1]) == pytest.approx(0.2)


def test_rising_proxy_over_falling_heldout_is_hacking():
    verdict = judge_proxy_trend(rows([0.2, 0.4, 0.6, 0.8], [0.5, 0.45, 0.4, 0.35]))
    assert verdict.hacking
    assert verdict.proxy_slope == pytest.approx(0.2) and verdict.heldout_slope == pytest.approx(-0.05)


def test_rising_proxy_over_flat_heldout_is_hacking():
    assert judge_proxy_trend(rows([0.2, 0.4, 0.6], [0.3, 0.3, 0.3])).hacking


def test_both_rising_or_proxy_falling_is_healthy():
    assert not judge_proxy_trend(rows([0.2, 0.4, 0.6], [0.1, 0.2, 0.3])).hacking
    assert not judge_proxy_trend(rows([0.6, 0.4, 0.2], [0.3, 0.3, 0.3])).hacking


def test_only_the_last_k_versions_count_in_any_order():
    # hacking early (versions 0..3), healthy in the last three (4..6)
    series = rows([0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0], [0.5, 0.4, 0.3, 0.2, 0.3, 0.4, 0.5])
    assert judge_proxy_trend(list(reversed(series)), HackingRule(last_k=4, min_points=3)).hacking is False
    assert judge_proxy_trend(series[:4], HackingRule(last_k=4, min_points=3)).hacking is True
    assert judge_proxy_trend(series, HackingRule(last_k=3, min_points=3)).versions == [4, 5, 6]


def test_too_few_versions_or_missing_sides_never_flag():
    assert not judge_proxy_trend(rows([0.2, 0.9], [0.5, 0.1])).hacking
    gappy = rows([0.2, 0.4, 0.6, 0.8], [0.5, None, float("nan"), 0.1])
    verdict = judge_proxy_trend(gappy)
    assert verdict.versions == [0, 3] and not verdict.hacking


def test_rule_thresholds_are_validated():
    with pytest.raises(ValidationError):
        HackingRule(last_k=3, min_points=4)
    with pytest.raises(ValidationError):
        HackingRule(last_k=1)
    # a stricter threshold turns a mild rise into no flag
    mild = rows([0.50, 0.52, 0.54], [0.3, 0.3, 0.3])
    assert judge_proxy_trend(mild).hacking
    assert not judge_proxy_trend(mild, HackingRule(proxy_min_slope=0.05)).hacking


def test_pattern_regression_flags_each_pattern_once():
    got = pattern_regression_flags([
        {"bug_pattern": "a", "first_success": 0.5, "last_success": 0.25, "success_delta": -0.25},
        {"bug_pattern": "a", "first_success": 0.5, "last_success": 0.25, "success_delta": -0.25},
        {"bug_pattern": "b", "first_success": 0.1, "last_success": 0.9, "success_delta": 0.8},
    ])
    assert [(f.rule, f.subject) for f in got] == [("pattern_regression", "a")]
    assert "0.500 -> 0.250" in got[0].detail


def test_parse_since():
    now = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    assert parse_since(None) == FAR_PAST
    assert parse_since("6h", now) == datetime(2024, 5, 1, 6, 0, tzinfo=timezone.utc)
    assert parse_since("90m", now) == datetime(2024, 5, 1, 10, 30, tzinfo=timezone.utc)
    assert parse_since("2d", now) == datetime(2024, 4, 29, 12, 0, tzinfo=timezone.utc)
    assert parse_since("2024-05-01") == datetime(2024, 5, 1, tzinfo=timezone.utc)  # no offset: UTC
    assert parse_since("2024-05-01T14:00:00+02:00") == datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    with pytest.raises(BadSinceError):
        parse_since("yesterday")


def test_since_is_bound_as_utc_text_whatever_its_zone():
    from consumers.drift import load_query
    from consumers.drift.queries import bind_parameters

    query = load_query("hack_rates")
    aware = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2024, 5, 1, 12, 0)
    assert bind_parameters(query, aware)["since"] == "2024-05-01 12:00:00.000"
    assert bind_parameters(query, naive)["since"] == "2024-05-01 12:00:00.000"
    assert bind_parameters(query)["since"] == "1970-01-01 00:00:00.000"
    # only the placeholders the SQL uses are sent: hack_rates takes no config
    assert set(bind_parameters(query, config="base")) == {"since", "window_s"}
