"""How far a candidate's success holds beyond the hidden tests, read from its feedback record.

Pure functions of one feedback record (schemas/feedback.avsc) for the reshaping:

- `robustness_score`: one number in [0, 1] for the `robust` reward component;
- `evaluator_verdicts`: the three evaluators' verdicts side by side (hidden tests,
  reference comparison, renamed variant) for an ensemble (mean, min, vote).

The two checks behind them:
- reference agreement = 1 - adversarial_mismatches / adversarial_checked: the share of
  random inputs (from the tests' domain, inputs the reference rejects left out) on which the
  candidate returns what the reference returns. Unknown when nothing was compared
  (`adversarial_checked` 0: no reference, a nondeterministic one, ...; the record's
  `adversarial_skip_reason` says why).
- rename outcome = 1 when renaming the entry point, its parameters and locals left the
  tests' outcome unchanged (`rename_passed`), 0 when it changed it. Unknown when the check did
  not run (`rename_checked` false: the candidate does not parse, or the check is off).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple


def reference_agreement(feedback: Mapping) -> float | None:
    """Share of compared random inputs where candidate and reference agree; None if none."""
    checked = int(feedback.get("adversarial_checked", 0))
    if checked <= 0:
        return None
    mismatches = min(max(int(feedback.get("adversarial_mismatches", 0)), 0), checked)
    return 1.0 - mismatches / checked


def rename_outcome(feedback: Mapping) -> float | None:
    """1.0 if the renamed variant scored as the original, 0.0 if not, None if not checked.
    Records from before `rename_checked` existed count as checked when `rename_passed` is set."""
    passed = feedback.get("rename_passed")
    if passed is None or not (feedback.get("rename_checked", True)):
        return None
    return 1.0 if passed else 0.0


def hidden_pass_fraction(feedback: Mapping) -> float:
    """Share of the hidden tests passed in the first run (`tests_passed / tests_total`)."""
    total = int(feedback.get("tests_total", 0))
    return int(feedback.get("tests_passed", 0)) / total if total > 0 else 0.0


def robustness_score(feedback: Mapping, no_evidence: float = 0.0) -> float:
    """The mean of the reference agreement and the rename outcome, over those known.

    Both weigh the same: each is one independent way a candidate's tests can mislead (keyed
    on the tests' inputs, keyed on names). With neither known the score is `no_evidence`
    (0.0: a candidate that could not be checked earns no robustness; a task-wide gap, such as
    a nondeterministic reference, is the same for a whole group and cancels in its
    normalisation, while an unparsable candidate, never renamed, gets nothing).
    """
    known = [v for v in (reference_agreement(feedback), rename_outcome(feedback)) if v is not None]
    return sum(known) / len(known) if known else no_evidence


class EvaluatorVerdicts(NamedTuple):
    """Each evaluator's pass fraction in [0, 1]; None where that evaluator did not run.

    hidden_tests: the hidden tests' pass fraction.
    reference_agreement: share of random inputs agreeing with the reference.
    renamed_pass: the renamed variant's pass fraction: the hidden tests' fraction when the
        rename changed nothing, 0.0 when it changed the outcome (the record keeps only
        whether it changed, so a changed outcome counts as failing, the cautious reading).
    """

    hidden_tests: float
    reference_agreement: float | None
    renamed_pass: float | None


def evaluator_verdicts(feedback: Mapping) -> EvaluatorVerdicts:
    """The three evaluators' verdicts on one candidate, for an ensemble over the known ones."""
    hidden = hidden_pass_fraction(feedback)
    renamed = rename_outcome(feedback)
    return EvaluatorVerdicts(
        hidden_tests=hidden,
        reference_agreement=reference_agreement(feedback),
        renamed_pass=None if renamed is None else hidden * renamed,
    )
