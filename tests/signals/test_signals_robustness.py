import pytest

from streams.signals import EvaluatorVerdicts, evaluator_verdicts, robustness_score


def feedback(**fields) -> dict:
    base = {"tests_total": 4, "tests_passed": 4, "adversarial_checked": 8, "adversarial_mismatches": 0,
            "rename_checked": True, "rename_passed": True}
    return {**base, **fields}


@pytest.mark.parametrize(
    "fields, score",
    [
        ({}, 1.0),  # agrees everywhere, rename harmless
        ({"adversarial_mismatches": 2}, (0.75 + 1.0) / 2),
        ({"adversarial_mismatches": 8, "rename_passed": False}, 0.0),
        ({"rename_passed": False}, 0.5),
        ({"adversarial_checked": 0, "adversarial_mismatches": 0}, 1.0),  # only the rename known
        ({"adversarial_checked": 0, "rename_passed": False}, 0.0),
        ({"rename_checked": False, "rename_passed": None, "adversarial_mismatches": 6}, 0.25),  # only the inputs
        ({"rename_checked": False, "rename_passed": None, "adversarial_checked": 0}, 0.0),  # no evidence
        ({"adversarial_mismatches": 99}, 0.5),  # mismatches never count beyond the inputs checked
    ],
)
def test_robustness_score_known_values(fields, score):
    assert robustness_score(feedback(**fields)) == pytest.approx(score)


def test_no_evidence_value_is_the_callers_choice_and_scores_stay_in_range():
    bare = feedback(rename_checked=False, rename_passed=None, adversarial_checked=0)
    assert robustness_score(bare, no_evidence=0.5) == 0.5
    for mismatches in range(9):
        for renamed in (True, False, None):
            value = robustness_score(feedback(adversarial_mismatches=mismatches, rename_passed=renamed))
            assert 0.0 <= value <= 1.0


def test_records_from_before_rename_checked_read_rename_passed():
    old = {"tests_total": 2, "tests_passed": 1, "adversarial_checked": 0, "rename_passed": False}
    assert robustness_score(old) == 0.0
    assert evaluator_verdicts(old) == EvaluatorVerdicts(0.5, None, 0.0)


def test_evaluator_verdicts_known_values():
    assert evaluator_verdicts(feedback()) == (1.0, 1.0, 1.0)
    verdicts = evaluator_verdicts(feedback(tests_passed=3, adversarial_mismatches=2))
    assert verdicts == EvaluatorVerdicts(hidden_tests=0.75, reference_agreement=0.75, renamed_pass=0.75)
    # a hack keyed on the tests' inputs: full marks from the tests, little from the reference
    hack = evaluator_verdicts(feedback(adversarial_mismatches=7))
    assert (hack.hidden_tests, hack.reference_agreement) == (1.0, 0.125)
    # a rename that changed the outcome counts as the renamed variant failing
    assert evaluator_verdicts(feedback(rename_passed=False)).renamed_pass == 0.0
    skipped = evaluator_verdicts(feedback(adversarial_checked=0, rename_checked=False, rename_passed=None))
    assert skipped == EvaluatorVerdicts(1.0, None, None)
    assert evaluator_verdicts(feedback(tests_total=0, tests_passed=0)).hidden_tests == 0.0
