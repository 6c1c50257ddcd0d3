"""R_robust, the evaluator ensemble and R_exec: known values, and the config rules that keep
them honest (robustness counted once, the exec tie-breaker below one test's worth)."""

import math

import pytest

from streams.reshaping import ReshapeState, config_from_dict, load_preset, reshape_group
from streams.reshaping.config import RobustnessConfig
from streams.reshaping.errors import ConfigError, InvalidFeedbackError
from streams.reshaping.rewards import (
    combine_evaluators,
    evaluator_outcomes,
    r_exec,
    r_robust,
    robustness_checks,
)
from tests.reshaping.feedback_factory import make_feedback, make_group

CHECKED = dict(adversarial_checked=8, adversarial_mismatches=2, rename_checked=True, rename_passed=True)


def test_robustness_checks_that_ran():
    assert robustness_checks(make_feedback(0, [1.0])) == {}
    assert robustness_checks(make_feedback(0, [1.0], **CHECKED)) == {"reference": 0.75, "rename": 1.0}
    failed_rename = make_feedback(0, [1.0], rename_checked=True, rename_passed=False)
    assert robustness_checks(failed_rename) == {"rename": 0.0}
    # a record from before rename_checked existed: a non-null rename_passed says the check ran
    assert robustness_checks(make_feedback(0, [1.0], rename_passed=True)) == {"rename": 1.0}


def test_r_robust_is_gated_by_the_pass_fraction_and_neutral_without_checks():
    cfg = RobustnessConfig()
    assert r_robust(make_feedback(0, [1.0], **CHECKED), 1.0, cfg) == pytest.approx(0.875)
    assert r_robust(make_feedback(0, [0.5], **CHECKED), 0.5, cfg) == pytest.approx(0.4375)
    # the buggy code agreeing with the reference everywhere still fails the tests: nothing
    agreeing = make_feedback(0, [0.0], adversarial_checked=8, rename_checked=True, rename_passed=True)
    assert r_robust(agreeing, 0.0, cfg) == 0.0
    assert r_robust(make_feedback(0, [1.0]), 1.0, cfg) == 1.0  # no reference: a pass is not worth less
    assert r_robust(make_feedback(0, [1.0]), 1.0, RobustnessConfig(unchecked=0.25)) == 0.25


def test_evaluators_and_their_combinations():
    fb = make_feedback(0, [0.75, 1.0], adversarial_checked=4, adversarial_mismatches=3, rename_checked=True,
                       rename_passed=True)
    outcomes = evaluator_outcomes(fb, 0.875)
    # the renamed variant passed as many tests as the first run (0.75), the reference agrees on 1 of 4
    assert outcomes == {"tests": 0.875, "reference": 0.25, "rename": 0.75}
    assert combine_evaluators(outcomes, "mean") == pytest.approx((0.875 + 0.25 + 0.75) / 3)
    assert combine_evaluators(outcomes, "min") == 0.25
    assert combine_evaluators(outcomes, "vote") == 0.75  # two of three reach 0.75
    renamed_differs = make_feedback(0, [1.0], rename_checked=True, rename_passed=False)
    assert evaluator_outcomes(renamed_differs, 1.0) == {"tests": 1.0, "rename": 0.0}
    assert combine_evaluators({"tests": 1.0, "rename": 0.0}, "vote") == 0.0  # no strict majority of two
    assert combine_evaluators({"tests": 0.5}, "vote") == combine_evaluators({"tests": 0.5}, "min") == 0.5
    # pass/fail outcomes: the majority verdict
    assert combine_evaluators({"tests": 1.0, "reference": 0.0, "rename": 1.0}, "vote") == 1.0
    assert combine_evaluators({"tests": 1.0, "reference": 0.0, "rename": 0.0}, "vote") == 0.0


def test_r_exec_is_coverage_over_tests_and_void_under_a_tracer():
    assert r_exec(make_feedback(0, [1.0], exec_line_coverage=0.8)) == pytest.approx(0.8 / 4)
    assert r_exec(make_feedback(0, [1.0], exec_line_coverage=0.8, exec_tracer_use=True)) == 0.0
    assert r_exec(make_feedback(0, [0.0], exec_line_coverage=0.8, tests_passed=0)) == 0.0  # no passed test
    assert r_exec(make_feedback(0, [0.0], exec_line_coverage=0.8, tests_total=0, tests_passed=0)) == 0.0


@pytest.mark.parametrize("combine", ["mean", "min", "vote"])
def test_an_ensemble_feeds_r_test_and_its_outcome_kind(combine):
    weights = {"robust": 0.0, "exec": 0.0}
    group = [make_feedback(0, [1.0], group_size=2, adversarial_checked=4, adversarial_mismatches=4,
                           rename_checked=True, rename_passed=True),
             make_feedback(1, [1.0], group_size=2, adversarial_checked=4, rename_checked=True, rename_passed=True)]
    expected = {"mean": 2 / 3, "min": 0.0, "vote": 1.0}[combine]
    for kind, place in (("pass_fraction", lambda x: x), ("binary", lambda x: float(x >= 1.0)),
                        ("layered", lambda x: 1.0 if x >= 1.0 else 0.4 + 0.6 * x if x > 0 else 0.3)):
        cfg = config_from_dict({"weights": weights, "outcome": {"kind": kind}, "robustness": {"combine": combine}})
        records, _ = reshape_group(group, ReshapeState(), cfg, step=0)
        assert records[0]["components"]["test"] == pytest.approx(place(expected)), kind
        assert records[1]["components"]["test"] == 1.0  # agrees everywhere: every evaluator says pass
        assert records[0]["components"]["robust"] == pytest.approx(0.5)  # still reported, weight 0


def test_robustness_counted_once():
    with pytest.raises(ConfigError, match="count twice"):
        config_from_dict({"robustness": {"combine": "mean"}})  # default weights.robust 0.3
    with pytest.raises(ConfigError, match="count twice"):
        config_from_dict({"robustness": {"combine": "vote"}, "weights": {
            "robust": 0.0, "exec": 0.0, "schedule": "linear", "end": {"robust": 0.2}}})


@pytest.mark.parametrize(("config", "allowed"), [
    ({"weights": {"exec": 0.49}}, True),  # 0.49 < 0.5 share x 1.0 x step 1
    ({"weights": {"exec": 0.51}}, False),
    ({"weights": {"test": 0.5, "exec": 0.3}}, False),
    ({"weights": {"exec": 0.31}, "outcome": {"kind": "layered"}}, False),  # step 0.6: at most 0.3
    ({"weights": {"exec": 0.29}, "outcome": {"kind": "layered"}}, True),
    ({"weights": {"exec": 0.01}, "outcome": {"kind": "binary"}}, False),  # a test may be worth nothing
    ({"weights": {"exec": 0.0}, "outcome": {"kind": "binary"}}, True),
    ({"weights": {"exec": 0.2, "robust": 0.0}, "robustness": {"combine": "mean"}}, False),  # a third of a test
    ({"weights": {"exec": 0.15, "robust": 0.0}, "robustness": {"combine": "mean"}}, True),
    ({"weights": {"exec": 0.01, "robust": 0.0}, "robustness": {"combine": "min"}}, False),
    ({"weights": {"schedule": "linear", "end": {"test": 0.05}}}, False),  # exec 0.05 outgrows the end's test
    ({"weights": {"schedule": "linear", "end": {"exec": 0.6}}}, False),
    ({"weights": {"exec": 0.2}, "exec": {"max_test_share": 0.1}}, False),
])
def test_exec_weight_stays_below_one_test_at_both_ends_of_the_schedule(config, allowed):
    if allowed:
        config_from_dict(config)
    else:
        with pytest.raises(ConfigError, match="weights.exec"):
            config_from_dict(config)


def test_forged_full_coverage_gains_less_than_one_test_under_full():
    """The most a forged coverage buys, against one more passing test, for every task size
    under the full preset at both ends of its schedule (and with layered outcomes)."""
    for outcome in ("pass_fraction", "layered"):
        data = load_preset("full").model_dump(mode="json")
        cfg = config_from_dict({**data, "outcome": {**data["outcome"], "kind": outcome}})
        for version in (0, 10_000):
            for n in (1, 2, 3, 7, 50):
                for passed in range(1, n):
                    common = dict(group_size=2, policy_version=version, tests_total=n, tree_edit_distance=0.0)
                    forged = make_feedback(0, [passed / n], tests_passed=passed, exec_line_coverage=1.0, **common)
                    better = make_feedback(1, [(passed + 1) / n], tests_passed=passed + 1, **common)
                    records, _ = reshape_group([forged, better], ReshapeState(), cfg, step=0)
                    gain = records[0]["weights"]["exec"] * records[0]["components"]["exec"]
                    one_test = records[0]["weights"]["test"] * (
                        records[1]["components"]["test"] - records[0]["components"]["test"])
                    assert 0.0 < gain < one_test, (outcome, version, n, passed)


@pytest.mark.parametrize(("overrides", "field"), [
    ({"exec_line_coverage": math.nan}, "exec_line_coverage"),
    ({"exec_line_coverage": 1.5}, "exec_line_coverage"),
    ({"adversarial_checked": -1}, "adversarial_checked"),
    ({"adversarial_mismatches": 1.5}, "adversarial_mismatches"),
    ({"adversarial_checked": 2, "adversarial_mismatches": 3}, "adversarial_mismatches"),
])
def test_bad_robustness_and_exec_fields_are_rejected(overrides, field):
    group = make_group([0.0, 1.0])
    group[1].update(overrides)
    with pytest.raises(InvalidFeedbackError) as info:
        reshape_group(group, ReshapeState(), load_preset("full"), step=0)
    assert info.value.field == field
