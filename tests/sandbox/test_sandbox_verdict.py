"""build_result on hand-written child reports (no sandbox needed)."""

import signal

from streams.sandbox.asserts import prepare_test
from streams.sandbox.models import ErrorKind
from streams.sandbox.verdict import build_result

TESTS = [
    prepare_test("assert f(1) == 2"),
    prepare_test("assert f(2) == [3]"),
    prepare_test("assert g() > 0"),
]


def reply(lines, wait_status=0, timed_out=False, cpu_s=0.01):
    return {
        "wait_status": wait_status,
        "timed_out": timed_out,
        "cpu_s": cpu_s,
        "wall_ms": 5.0,
        "results": "".join(repr(line) + "\n" for line in lines),
        "results_truncated": False,
        "output": "out",
        "output_truncated": False,
    }


def build(lines, **kw):
    return build_result(
        TESTS, reply(lines, **kw), cpu_seconds=2, runtime_ms=7.0, flags=set()
    )


LOAD_OK = ("load", "none", "", 0.1)


def test_values_are_compared_with_the_expected_literals_on_the_host():
    result = build(
        [
            LOAD_OK,
            ("value", 0, "2", False, 0.1),
            ("value", 1, "[4]", False, 0.1),
            ("pass", 2, 0.1),
            ("done",),
        ]
    )
    assert [o.passed for o in result.outcomes] == [True, False, True]
    assert result.outcomes[1].message == "expected [3], got [4]"
    assert (result.tests_passed, result.error_kind) == (2, ErrorKind.WRONG_ANSWER)
    assert abs(result.pass_fraction - 2 / 3) < 1e-12


def test_all_pass_is_none():
    result = build(
        [
            LOAD_OK,
            ("value", 0, "2", False, 0.1),
            ("value", 1, "[3]", False, 0.1),
            ("pass", 2, 0.1),
            ("done",),
        ]
    )
    assert (result.tests_passed, result.error_kind, result.stdout) == (
        3,
        ErrorKind.NONE,
        "out",
    )


def test_non_literal_or_truncated_value_fails():
    result = build(
        [
            LOAD_OK,
            ("value", 0, "<Two object>", False, 0.1),
            ("value", 1, "[3", True, 0.1),
            ("pass", 2, 0.1),
            ("done",),
        ]
    )
    assert [o.passed for o in result.outcomes] == [False, False, True]
    assert "not a plain value" in result.outcomes[0].message
    assert "too long" in result.outcomes[1].message


def test_load_error_fails_every_test_with_its_kind():
    result = build([("load", "import", "ModuleNotFoundError: x", 0.1)])
    assert result.error_kind is ErrorKind.IMPORT
    assert [o.error_kind for o in result.outcomes] == [ErrorKind.IMPORT] * 3


def test_gravest_kind_wins():
    result = build(
        [
            LOAD_OK,
            ("fail", 0, "wrong_answer", "AssertionError", 0.1),
            ("fail", 1, "memory", "MemoryError", 0.1),
            ("fail", 2, "crash", "IndexError", 0.1),
            ("done",),
        ]
    )
    assert result.error_kind is ErrorKind.MEMORY
    assert result.error_message == "MemoryError"


def test_unreported_tests_take_the_reason_the_run_ended():
    killed = build([LOAD_OK, ("value", 0, "2", False, 0.1)], timed_out=True)
    assert [o.error_kind for o in killed.outcomes] == [
        ErrorKind.NONE,
        ErrorKind.TIMEOUT,
        ErrorKind.TIMEOUT,
    ]
    assert killed.error_kind is ErrorKind.TIMEOUT
    # The judge lost the candidate's process during test 1: its end names the reason.
    lost = [LOAD_OK, ("value", 0, "2", False, 0.1), ("lost", 1, False)]
    segv = build(lost, wait_status=signal.SIGSEGV)
    assert segv.error_kind is ErrorKind.CRASH and "SIGSEGV" in segv.error_message
    assert [o.passed for o in segv.outcomes] == [True, False, False]
    cpu = build(lost, wait_status=signal.SIGKILL, cpu_s=2.3)
    assert cpu.error_kind is ErrorKind.TIMEOUT
    hung = build(lost[:2] + [("lost", 1, True)], wait_status=signal.SIGKILL)
    assert [o.error_kind for o in hung.outcomes][1:] == [ErrorKind.TIMEOUT] * 2


def test_a_candidate_that_exits_before_the_judge_is_done_scores_nothing():
    # Test 0 passed, then the candidate's process ended itself with an exit call.
    result = build([LOAD_OK, ("value", 0, "2", False, 0.1), ("lost", 1, False)], wait_status=0)
    assert result.tests_passed == 0 and "results_tampered" in result.flags
    assert result.error_kind is ErrorKind.CRASH


def test_a_report_from_the_judge_of_tampering_scores_nothing():
    result = build([LOAD_OK, ("value", 0, "2", False, 0.1), ("tampered", 1, "a reply that does not answer")])
    assert result.tests_passed == 0 and "results_tampered" in result.flags
    assert "does not answer" in result.error_message


def test_test_times_longer_than_the_run_are_impossible():
    # reply() says the whole run took 5 ms; three tests of 40 ms cannot have happened.
    lines = [LOAD_OK, ("value", 0, "2", False, 40.0), ("value", 1, "[3]", False, 40.0), ("pass", 2, 40.0), ("done",)]
    result = build(lines)
    assert result.tests_passed == 0 and "results_tampered" in result.flags


def test_values_are_read_back_as_plain_builtins_only():
    # The wire text of a Counter is a plain dict; a handle is never a value here.
    tests = [prepare_test("assert f() == {'a': 2}"), prepare_test("assert f() == 1")]
    lines = [LOAD_OK, ("value", 0, '{"d":[["a",2]]}', False, 0.1),
             ("value", 1, '{"h":1,"type":"Yes"}', False, 0.1), ("done",)]
    result = build_result(tests, reply(lines), cpu_seconds=2, runtime_ms=1.0, flags=set())
    assert [o.passed for o in result.outcomes] == [True, False]
    assert "not a plain value" in result.outcomes[1].message


def test_forged_and_garbage_lines_are_flagged():
    # A candidate writing its own "value" line before the real one: that test fails.
    result = build(
        [
            LOAD_OK,
            ("value", 0, "2", False, 0.1),
            ("value", 0, "2", False, 0.1),
            ("value", 1, "[3]", False, 0.1),
            ("pass", 2, 0.1),
            ("done",),
        ]
    )
    assert "results_tampered" in result.flags
    assert [o.passed for o in result.outcomes] == [False, True, True]
    garbage = build_result(
        TESTS,
        {**reply([LOAD_OK]), "results": "__import__('os')\n"},
        cpu_seconds=2,
        runtime_ms=1.0,
        flags=set(),
    )
    assert "results_tampered" in garbage.flags


def test_zygote_error_is_a_sandbox_result():
    result = build_result(
        TESTS,
        {"error": "OSError: boom"},
        cpu_seconds=2,
        runtime_ms=1.0,
        flags={"weak_isolation"},
    )
    assert result.error_kind is ErrorKind.SANDBOX
    assert result.flags == ["weak_isolation"]
    assert all(o.error_kind is ErrorKind.SANDBOX for o in result.outcomes)


def test_lines_a_test_ran_are_attached_to_its_outcome_and_malformed_ones_flagged():
    result = build(
        [
            LOAD_OK,
            ("value", 0, "2", False, 0.1),
            ("lines", 0, (2, 3)),
            ("lines", 0, (2, 3, 4)),  # a second claim for the same test
            ("value", 1, "[3]", False, 0.1),
            ("lines", 1, ("2",)),  # not line numbers
            ("lines", 7, (1,)),  # no such test
            ("pass", 2, 0.1),
            ("done",),
        ]
    )
    assert result.tests_passed == 3
    assert [sorted(o.executed_lines) for o in result.outcomes] == [[2, 3], [], []]
    assert "results_tampered" in result.flags
