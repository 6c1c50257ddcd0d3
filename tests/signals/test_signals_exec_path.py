"""The execution-path signal on known code: executable lines, coverage over passed tests,
tracer use. The real sandbox's side is in tests/sandbox/test_line_trace.py and
tests/feedback/test_exec_path.py."""

import pytest

from streams.sandbox import ErrorKind, TestResult
from streams.signals import executable_lines, line_coverage, uses_tracer

CODE = '''import math


def f(xs, k):
    """Docstring: no bytecode."""
    global G
    total = 0
    for x in xs:
        if x > k:
            total += x
        else:
            total -= 1
    return total


def one(x): return x + 1


class C:
    limit = 3

    def m(self):
        return [y * 2
                for y in range(self.limit)]
'''


def outcome(passed: bool, *lines: int) -> TestResult:
    kind = ErrorKind.NONE if passed else ErrorKind.WRONG_ANSWER
    return TestResult(0, passed, kind, "", 0.0, frozenset(lines))


def test_executable_lines_are_the_function_lines_that_hold_bytecode():
    # not the import, the def lines, the docstring, `global`, `else:`, or the class body
    assert executable_lines(CODE) == {7, 8, 9, 10, 12, 13, 16, 23, 24}


@pytest.mark.parametrize("code", ["def f(:\n", "x = 1\n", ""])
def test_code_without_functions_has_no_executable_lines(code):
    assert executable_lines(code) == frozenset()


def test_coverage_counts_lines_of_passed_tests_only_and_stays_within_the_code():
    executable = executable_lines(CODE)  # 9 lines
    assert line_coverage(executable, [outcome(True, 7, 8, 13), outcome(True, 7, 8, 9, 10, 13)]) == 5 / 9
    # the else branch ran only in a failed test: not counted
    assert line_coverage(executable, [outcome(True, 7, 8, 13), outcome(False, 7, 8, 9, 12, 13)]) == 3 / 9
    # lines that are no function lines (claimed or not) never count, so the share stays <= 1
    assert line_coverage(executable, [outcome(True, *range(-5, 500))]) == 1.0
    assert line_coverage(executable, [outcome(True, 1, 2, 3, 5, 6, 11, 20, 99)]) == 0.0
    assert line_coverage(executable, []) == 0.0
    assert line_coverage(frozenset(), [outcome(True, 1, 2)]) == 0.0


TRACER_USES = [
    "import sys\ndef f(x):\n    sys.settrace(None)\n    return x\n",
    "import sys as s\ndef f(x):\n    s.setprofile(lambda *a: None)\n    return x\n",
    "import sys\ndef f(x):\n    return sys.gettrace() or x\n",
    "from sys import settrace\ndef f(x):\n    settrace(None)\n    return x\n",
    "import threading\nthreading.settrace(print)\ndef f(x):\n    return x\n",
    "import sys\ndef f(x):\n    sys.monitoring.use_tool_id(0, 'x')\n    return x\n",
    "import sys\ndef f(x):\n    sys._getframe(1).f_trace = None\n    return x\n",
    "import sys\ndef f(x):\n    getattr(sys, 'settrace')(None)\n    return x\n",
    "import coverage\ndef f(x):\n    return x\n",
    "from trace import Trace\ndef f(x):\n    return x\n",
    "def f(x):\n    import cProfile\n    return x\n",
]


@pytest.mark.parametrize("code", TRACER_USES)
def test_tracer_apis_are_found(code):
    assert uses_tracer(code)


@pytest.mark.parametrize("code", [
    CODE,
    "def trace(x):\n    profile = {'settings': x}\n    return profile\n",
    "def f(monitoring, settrace):\n    return monitoring or settrace\n",  # variables, not the API
    "def f(x)\n    sys.settrace(None)\n",  # unparsable: never ran
])
def test_ordinary_and_unparsable_code_uses_no_tracer(code):
    assert not uses_tracer(code)


def test_a_candidates_syntax_warnings_stay_out_of_the_worker_log(recwarn):
    assert executable_lines("def f(x):\n    return (1)(x)\n") == frozenset({2})  # 'int' is not callable
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]
