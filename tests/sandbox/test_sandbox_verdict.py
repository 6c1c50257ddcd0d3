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
    assert "not a literal" in result.outcomes[0].message
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


def test_unreported_tests_take_the_reason_the_child_died():
    killed = build([LOAD_OK, ("value", 0, "2", False, 0.1)], timed_out=True)
    assert [o.error_kind for o in killed.outcomes] == [
        ErrorKind.NONE,
        ErrorKind.TIMEOUT,
        ErrorKind.TIMEOUT,
    ]
    assert killed.error_kind is ErrorKind.TIMEOUT
    segv = build([LOAD_OK], wait_status=signal.SIGSEGV)
    assert segv.error_kind is ErrorKind.CRASH and "SIGSEGV" in segv.error_message
    cpu = build([LOAD_OK], wait_status=signal.SIGKILL, cpu_s=2.3)
    assert cpu.error_kind is ErrorKind.TIMEOUT
    exited = build([LOAD_OK], wait_status=3 << 8)
    assert exited.error_kind is ErrorKind.CRASH and "status 3" in exited.error_message


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
