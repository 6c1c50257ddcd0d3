import math

import pytest

from streams.signals import SignalInputError, aggregate_repeats, pass_fraction


def test_pass_fraction_counts_passed_tests():
    assert pass_fraction([True, False, True, True]) == 0.75


def test_pass_fraction_weights_tests():
    # weights 1, 3: only the heavy test passes -> 3 / 4
    assert pass_fraction([False, True], weights=[1.0, 3.0]) == 0.75


def test_pass_fraction_partial_credit_per_checkpoint():
    # a test with 4 checkpoints, 1 passed, next to a passed test
    assert pass_fraction([0.25, True]) == pytest.approx(0.625)


def test_pass_fraction_reads_decoded_test_outcomes():
    outcomes = [
        {"index": 0, "passed": True},
        {"index": 1, "passed": False, "error_kind": "wrong_answer"},
    ]
    assert pass_fraction(outcomes) == 0.5


@pytest.mark.parametrize(
    "outcomes, weights",
    [
        ([], None),
        ([True], [1.0, 2.0]),
        ([True, False], [0.0, 0.0]),
        ([True], [-1.0]),
        ([1.5], None),
        ([{"ok": 1}], None),
    ],
)
def test_pass_fraction_rejects_bad_input(outcomes, weights):
    with pytest.raises(SignalInputError):
        pass_fraction(outcomes, weights)


def test_repeats_that_agree_are_not_flaky():
    stats = aggregate_repeats([0.5, 0.5, 0.5])
    assert (stats.mean, stats.std, stats.n, stats.flaky) == (0.5, 0.0, 3, False)


def test_repeats_that_disagree_are_flaky_with_population_std():
    stats = aggregate_repeats([1.0, 0.0])
    assert stats.mean == 0.5
    assert stats.std == 0.5  # sqrt(((0.5)^2 + (0.5)^2) / 2)
    assert stats.flaky


def test_flaky_tolerance_allows_small_spread():
    runs = [0.75, 1.0, 1.0]
    assert not aggregate_repeats(runs, flaky_tolerance=0.25).flaky
    assert aggregate_repeats(runs, flaky_tolerance=0.2).flaky
    # mean 11/12, deviations -1/6, 1/12, 1/12 -> variance (1/36 + 2/144) / 3 = 1/72
    assert aggregate_repeats(runs).std == pytest.approx(math.sqrt(1 / 72))


@pytest.mark.parametrize("runs", [[], [1.2], [float("nan")]])
def test_repeats_reject_bad_input(runs):
    with pytest.raises(SignalInputError):
        aggregate_repeats(runs)
