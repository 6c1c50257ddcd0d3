"""Every drift query on the synthetic history returns the hand-computed rows."""

import math
import statistics
from datetime import datetime, timedelta, timezone

import pytest

from consumers.drift import run_drift
from tests.drift import events
from tests.drift.events import MISSING_IN_TUNED, T0

START = datetime.fromtimestamp(T0 / 1000, tz=timezone.utc)
# hand-computed from events.PASSED: tests passed of 32 per version, rollouts passing all 4 of 8
PASS_RATE = [17 / 32, 11 / 32, 16 / 32, 16 / 32]
FULL_SUCCESS = [3 / 8, 2 / 8, 3 / 8, 3 / 8]


def run(store, name, tmp_path, **kw):
    return run_drift(store, name, out_dir=tmp_path, **kw)


def column(report, name):
    return [row[name] for row in report.as_dicts()]


def test_reward_by_version(history, tmp_path):
    report = run(history, "reward_by_version", tmp_path, config="base")
    assert column(report, "policy_version") == [0, 1, 2, 3]
    # the feedback batch was written twice; FINAL counts each rollout once
    assert column(report, "rollouts") == [8, 8, 8, 8]
    assert column(report, "pass_rate") == PASS_RATE
    assert report.as_dicts()[2]["pass_rate"] == 0.5
    assert column(report, "full_success") == FULL_SUCCESS
    assert column(report, "advantage_rows") == [8, 8, 8, 8]
    # config base rewards the pass fraction itself; group-normalised advantages average 0
    assert column(report, "reward_enhanced_mean") == pytest.approx(PASS_RATE, abs=1e-6)
    assert column(report, "reward_raw_mean") == pytest.approx(PASS_RATE, abs=1e-6)
    assert column(report, "advantage_mean") == pytest.approx([0, 0, 0, 0], abs=1e-6)


def test_reward_by_version_of_other_config_and_since(history, tmp_path):
    tuned = run(history, "reward_by_version", tmp_path, config="tuned")
    assert column(tuned, "advantage_rows") == [8, 8, 8, 7]  # one rollout missing under tuned
    # tuned adds 0.1 * sample_index (0..3): +0.15 on average over a full group
    assert column(tuned, "reward_enhanced_mean")[0] == pytest.approx(17 / 32 + 0.15, abs=1e-6)
    later = run(history, "reward_by_version", tmp_path, config="base", since=START + timedelta(seconds=120))
    assert column(later, "policy_version") == [2, 3]
    assert column(later, "pass_rate") == [0.5, 0.5]


def test_reward_by_version_keeps_versions_without_advantages(history, tmp_path):
    report = run(history, "reward_by_version", tmp_path, config="no-such-config")
    assert column(report, "pass_rate") == PASS_RATE
    assert column(report, "reward_enhanced_mean") == [None] * 4


def test_reward_by_window(history, tmp_path):
    minute = run(history, "reward_by_window", tmp_path, config="base", window_s=60)
    assert column(minute, "window_start") == [START + timedelta(minutes=v) for v in range(4)]
    assert column(minute, "pass_rate") == PASS_RATE
    assert column(minute, "full_success") == FULL_SUCCESS
    two_minutes = run(history, "reward_by_window", tmp_path, config="base", window_s=120)
    assert column(two_minutes, "window_start") == [START, START + timedelta(minutes=2)]
    assert column(two_minutes, "rollouts") == [16, 16]
    assert column(two_minutes, "pass_rate") == [28 / 64, 32 / 64]
    assert column(two_minutes, "full_success") == [5 / 16, 6 / 16]


def test_pattern_success(history, tmp_path):
    report = run(history, "pattern_success", tmp_path, window_s=60)
    rows = report.as_dicts()
    off = [r for r in rows if r["bug_pattern"] == "off_by_one"]
    wrong = [r for r in rows if r["bug_pattern"] == "wrong_operator"]
    assert [r["full_success"] for r in off] == [1 / 4, 2 / 4, 2 / 4, 3 / 4]
    assert [r["full_success"] for r in wrong] == [2 / 4, 0, 1 / 4, 0]
    assert [r["pass_rate"] for r in wrong] == [12 / 16, 0, 4 / 16, 1 / 16]
    assert {r["success_delta"] for r in off} == {0.5}
    assert {r["success_delta"] for r in wrong} == {-0.5}
    assert off[0]["pass_rate_delta"] == pytest.approx(15 / 16 - 5 / 16)
    assert wrong[0]["pass_rate_delta"] == pytest.approx(1 / 16 - 12 / 16)
    # only the pattern that got worse is flagged
    assert [(f.rule, f.subject) for f in report.flags] == [("pattern_regression", "wrong_operator")]


def test_hack_rates(history, tmp_path):
    report = run(history, "hack_rates", tmp_path, window_s=60)
    got = [(r["window_start"], r["flag"], r["flagged"], r["rollouts"], r["rate"]) for r in report.as_dicts()]
    minute = [START + timedelta(minutes=v) for v in range(4)]
    assert got == [
        (minute[0], "hardcoded_output", 0, 8, 0.0),
        (minute[0], "swallowed_exception", 0, 8, 0.0),
        (minute[1], "hardcoded_output", 0, 8, 0.0),
        (minute[1], "swallowed_exception", 1, 8, 1 / 8),
        (minute[2], "hardcoded_output", 1, 8, 1 / 8),  # listed twice on one row, counted once
        (minute[2], "swallowed_exception", 2, 8, 2 / 8),
        (minute[3], "hardcoded_output", 0, 8, 0.0),
        (minute[3], "swallowed_exception", 3, 8, 3 / 8),
    ]


def test_proxy_vs_heldout_uses_the_version_label(history, tmp_path):
    report = run(history, "proxy_vs_heldout", tmp_path, config="base")
    # eval steps are 100+v: had the step been used, versions 100.. would show up
    assert column(report, "policy_version") == [0, 1, 2, 3]
    assert column(report, "proxy_reward") == pytest.approx(PASS_RATE, abs=1e-6)
    assert column(report, "heldout_success") == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert column(report, "eval_rows") == [1, 1, 1, 1]  # the eval row without success_at_1 is ignored
    assert column(report, "gap") == pytest.approx([p - h for p, h in zip(PASS_RATE, [0.1, 0.2, 0.3, 0.4])], abs=1e-6)


def test_proxy_vs_heldout_flags_hacking_only_on_the_hacking_series(history, tmp_path):
    hacky = run(history, "proxy_vs_heldout", tmp_path / "hacky", config="hacky")
    assert column(hacky, "proxy_reward") == pytest.approx(events.HACKY_PROXY, abs=1e-6)
    assert column(hacky, "heldout_success") == pytest.approx(events.HACKY_HELDOUT)
    assert [(f.rule, f.subject) for f in hacky.flags] == [("reward_hacking", "hacky")]
    healthy = run(history, "proxy_vs_heldout", tmp_path / "healthy", config="healthy")
    # no policy_version label on these eval rows: the step is the version
    assert column(healthy, "policy_version") == [0, 1, 2, 3, 4]
    assert column(healthy, "heldout_success") == pytest.approx(events.HEALTHY_HELDOUT)
    assert healthy.flags == []


def _expected_side(config_id):
    records = {r["rollout_id"]: r for r in events.advantages(config_id) if r["rollout_id"] != MISSING_IN_TUNED}
    adv = [records[k]["advantage"] for k in sorted(records)]
    raw = [records[k]["reward_raw"] for k in sorted(records)]
    return statistics.fmean(adv), statistics.pstdev(adv), statistics.correlation(adv, raw)


def test_config_compare_matches_python(history, tmp_path):
    report = run(history, "config_compare", tmp_path, config="base", config_b="tuned")
    a, b = report.as_dicts()
    assert (a["side"], a["config_id"], b["side"], b["config_id"]) == ("a", "base", "b", "tuned")
    assert (a["rows_in_config"], b["rows_in_config"]) == (32, 31)
    assert a["rows_matched"] == b["rows_matched"] == 31
    # base: the one group whose 4 rollouts all passed nothing (version 1, wrong_operator) of 8;
    # tuned's 0.1 * sample_index spreads every group
    assert (a["zero_group_share"], b["zero_group_share"]) == (1 / 8, 0.0)
    for side, config_id in ((a, "base"), (b, "tuned")):
        mean, std, corr = _expected_side(config_id)
        assert side["advantage_mean"] == pytest.approx(mean, abs=1e-5)
        assert side["advantage_std"] == pytest.approx(std, abs=1e-5)
        assert side["corr_advantage_raw"] == pytest.approx(corr, abs=1e-5)
    assert not math.isclose(a["corr_advantage_raw"], b["corr_advantage_raw"], abs_tol=1e-3)


def test_learner_health(history, tmp_path):
    base = run(history, "learner_health", tmp_path, config="base")
    assert column(base, "step") == [0, 1, 2, 3]
    assert column(base, "kl_ref")[:3] == pytest.approx([0.01, 0.02, 0.03])
    assert column(base, "kl_ref")[3] is None  # step 3 did not measure it: its 0 is not shown
    assert column(base, "kl_coef") == pytest.approx([0.0, 0.02, 0.04, 0.06])
    assert column(base, "is_masked_share") == pytest.approx([0.0, 0.02, 0.04, 0.06])
    assert column(base, "clip_high_frac") == pytest.approx([0.2] * 4)
    assert column(base, "dropped_stale") == [0.0, 1.0, None, 3.0]  # step 2 did not report it
    assert column(base, "grad_norm") == [1.0, 2.0, 3.0, 4.0]
    every = run(history, "learner_health", tmp_path)  # no config: every config, averaged per step
    step1 = every.as_dicts()[1]
    assert (step1["metric_rows"], step1["grad_norm"]) == (2, 6.0)
    # the tuned row's kl_ref of 0 does not say it was measured (a row of an older learner): ignored
    assert step1["kl_ref"] == pytest.approx(0.02)


def test_evaluation_reliability(history, tmp_path):
    report = run(history, "evaluation_reliability", tmp_path)
    assert column(report, "policy_version") == [0, 1, 2, 3]
    assert column(report, "rollouts") == [8, 8, 8, 8]  # the replayed batch counts once
    assert column(report, "environment_failures") == [0, 1, 3, 0]
    assert column(report, "re_evaluated") == [0, 1, 4, 0]
    assert column(report, "flaky_rollouts") == [1, 0, 0, 1]
    assert column(report, "environment_failure_rate") == [0, 1 / 8, 3 / 8, 0]
    assert column(report, "flaky_rate") == [1 / 8, 0, 0, 1 / 8]
    later = run(history, "evaluation_reliability", tmp_path, since=START + timedelta(seconds=120))
    assert column(later, "environment_failures") == [3, 0]


def test_excluded_by_version(history, tmp_path):
    report = run(history, "excluded_by_version", tmp_path, config="governed")
    assert column(report, "policy_version") == [0, 1, 2, 3]
    assert column(report, "environment_failures") == [0, 1, 3, 0]  # feedback, written twice, counted once
    assert column(report, "rollouts") == [8, 8, 8, 8]
    # version 1: the failure alone; version 2: three failures leave one member, so all four
    assert column(report, "excluded") == [0, 1, 4, 0]
    assert column(report, "excluded_share") == [0.0, 1 / 8, 0.5, 0.0]
    assert column(report, "groups") == [2, 2, 2, 2]
    assert column(report, "uncompared_groups") == [0, 0, 1, 0]
    assert column(report, "uncompared_group_share") == [0.0, 0.0, 0.5, 0.0]
    base = run(history, "excluded_by_version", tmp_path, config="base")
    assert column(base, "excluded") == [0, 0, 0, 0] and column(base, "environment_failures") == [0, 1, 3, 0]


def test_review_agreement_counts_each_rollout_once_by_its_latest_verdict(history, tmp_path):
    report = run(history, "review_agreement", tmp_path)
    rows = {(r["verdict"], r["hack_class"]): (r["reviews"], r["detector_flagged"], r["agreed"], r["agreement"])
            for r in report.as_dicts()}
    assert rows == {("fine", ""): (2, 1, 1, 0.5), ("hack", "hardcoded_output"): (1, 1, 1, 1.0),
                    ("hack", "special_case"): (1, 0, 0, 0.0)}
