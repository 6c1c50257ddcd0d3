"""The differential check's pure parts: its plan and the reading of the reference's probe."""

from streams.feedback.differential import (SKIP_DISABLED, SKIP_NO_LITERAL_CALLS, SKIP_NO_REFERENCE,
                                           SKIP_NO_VALID_INPUTS, SKIP_NONDETERMINISTIC, SKIP_REFERENCE_BROKEN,
                                           ProbeVerdict, plan_differential, probe_verdict)
from streams.sandbox import ErrorKind, EvalResult, TestResult
from streams.signals import SignalConfig

TASK = {"task_id": "t1", "entry_point": "f", "reference_code": "def f(x):\n    return x\n",
        "tests": ["assert f(3) == 3", "assert f(10) == 10"], "test_setup_code": ""}


def result(*outcomes: tuple[bool, ErrorKind, float], kind: ErrorKind = ErrorKind.NONE) -> EvalResult:
    tests = [TestResult(i, passed, error, "", ms) for i, (passed, error, ms) in enumerate(outcomes)]
    return EvalResult(sum(t.passed for t in tests), len(tests), tests, kind, "", 1.0, "", [])


PASS = (True, ErrorKind.NONE, 0.2)
RAISED = (False, ErrorKind.CRASH, 0.2)
DISAGREED = (False, ErrorKind.WRONG_ANSWER, 0.2)
NEVER_RAN = (False, ErrorKind.TIMEOUT, 0.0)


def test_probe_keeps_the_inputs_the_reference_takes():
    assert probe_verdict(result(PASS, RAISED, PASS)) == ProbeVerdict((0, 2), "", complete=True)
    assert probe_verdict(result(RAISED, RAISED)).skip_reason == SKIP_NO_VALID_INPUTS


def test_one_self_disagreement_makes_the_reference_nondeterministic():
    verdict = probe_verdict(result(PASS, DISAGREED, PASS))
    assert verdict.usable == () and verdict.skip_reason == SKIP_NONDETERMINISTIC


def test_a_reference_that_never_reached_the_tests_is_broken_and_cut_runs_are_not_kept():
    broken = probe_verdict(result((False, ErrorKind.IMPORT, 0.0), (False, ErrorKind.IMPORT, 0.0),
                                  kind=ErrorKind.IMPORT))
    assert broken.skip_reason == SKIP_REFERENCE_BROKEN and broken.complete
    cut = probe_verdict(result(PASS, NEVER_RAN, kind=ErrorKind.TIMEOUT))
    assert cut.usable == (0,) and not cut.complete
    host = probe_verdict(result((False, ErrorKind.SANDBOX, 0.0), kind=ErrorKind.SANDBOX))
    assert not host.complete


def test_the_plan_is_the_tasks_whatever_the_rollout():
    config = SignalConfig()
    plan = plan_differential(TASK, 6, config)
    assert len(plan.calls) == 6 and plan == plan_differential(dict(TASK), 6, config)
    assert "_reshaper_reference_f" in plan.reference_setup
    other = plan_differential({**TASK, "task_id": "t2"}, 6, config)
    assert other.calls != plan.calls  # another task, another seed
    assert plan_differential(TASK, 0, config).skip_reason == SKIP_DISABLED
    assert plan_differential({**TASK, "reference_code": ""}, 6, config).skip_reason == SKIP_NO_REFERENCE
    no_literals = {**TASK, "tests": ["assert f(X) == 3"]}
    assert plan_differential(no_literals, 6, config).skip_reason == SKIP_NO_LITERAL_CALLS
