"""How far a candidate's success holds beyond the hidden tests, read from its feedback record.

Pure readings of one feedback record (schemas/feedback.avsc); the reshaping turns them into
the `robust` reward component or an ensemble of evaluators (streams/reshaping/rewards.py).
The two checks:
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

from typing import Mapping


def reference_agreement(feedback: Mapping) -> float | None:
    """Share of compared random inputs where candidate and reference agree; None if none."""
    checked = int(feedback.get("adversarial_checked", 0))
    if checked <= 0:
        return None
    mismatches = min(max(int(feedback.get("adversarial_mismatches", 0)), 0), checked)
    return 1.0 - mismatches / checked


def rename_outcome(feedback: Mapping) -> float | None:
    """1.0 if the renamed variant scored as the original, 0.0 if not, None if not checked.
    Records from before `rename_checked` existed (decoded with its default, false) count as
    checked when `rename_passed` is set; the evaluator sets one only with the other."""
    passed = feedback.get("rename_passed")
    if not feedback.get("rename_checked") and passed is None:
        return None
    return 1.0 if passed else 0.0
