import pytest

from streams.signals import reference_agreement, rename_outcome


def feedback(**fields) -> dict:
    base = {"tests_total": 4, "tests_passed": 4, "adversarial_checked": 8, "adversarial_mismatches": 0,
            "rename_checked": True, "rename_passed": True}
    return {**base, **fields}


@pytest.mark.parametrize(
    "fields, agreement",
    [
        ({}, 1.0),
        ({"adversarial_mismatches": 2}, 0.75),
        ({"adversarial_mismatches": 8}, 0.0),
        ({"adversarial_mismatches": 99}, 0.0),  # mismatches never count beyond the inputs checked
        ({"adversarial_checked": 0}, None),  # nothing compared: unknown, not agreement
    ],
)
def test_reference_agreement_known_values(fields, agreement):
    assert reference_agreement(feedback(**fields)) == (pytest.approx(agreement) if agreement is not None else None)


@pytest.mark.parametrize(
    "fields, outcome",
    [
        ({}, 1.0),
        ({"rename_passed": False}, 0.0),
        ({"rename_checked": False, "rename_passed": None}, None),  # not run
    ],
)
def test_rename_outcome_known_values(fields, outcome):
    assert rename_outcome(feedback(**fields)) == outcome


def test_records_from_before_rename_checked_read_rename_passed():
    old = {"tests_total": 4, "tests_passed": 2, "adversarial_checked": 0, "rename_checked": False,
           "rename_passed": False}  # as the newer reader decodes an older record: the default, false
    assert (reference_agreement(old), rename_outcome(old)) == (None, 0.0)
    assert rename_outcome({"rename_passed": None}) is None
