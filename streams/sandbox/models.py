"""Requests and results exchanged with the sandbox."""

from dataclasses import dataclass, field
from enum import Enum


class ErrorKind(str, Enum):
    """Why a candidate (or one test of it) did not pass."""

    NONE = "none"
    SYNTAX = "syntax"
    IMPORT = "import"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    CRASH = "crash"
    WRONG_ANSWER = "wrong_answer"
    SANDBOX = "sandbox"


# When tests fail for different reasons, the whole result reports the gravest.
SEVERITY = [
    ErrorKind.NONE,
    ErrorKind.WRONG_ANSWER,
    ErrorKind.IMPORT,
    ErrorKind.CRASH,
    ErrorKind.MEMORY,
    ErrorKind.TIMEOUT,
    ErrorKind.SYNTAX,
    ErrorKind.SANDBOX,
]


@dataclass(frozen=True)
class EvalRequest:
    """One candidate and its tests.

    code: candidate source (str; raw bytes are decoded as UTF-8 with replacement).
    tests: MBPP-style assert statements.
    entry_point: the function under test (kept visible to tests even if it shadows a builtin).
    setup_code: runs after the candidate, before the tests (MBPP test_setup_code).
    imports: import lines run before the tests, e.g. "import math".
    timeout_s: overrides SandboxConfig.timeout_s for this request.
    trace_lines: record which lines of the candidate's functions each test ran
        (TestResult.executed_lines); measured in the candidate's process, so a claim only.
    seed: seeds `random` in the candidate's process before its code loads, so a run can be
        repeated exactly; None leaves it as the interpreter seeds it (from the OS).
    """

    code: str
    tests: list[str]
    entry_point: str = ""
    setup_code: str = ""
    imports: list[str] = field(default_factory=list)
    timeout_s: float | None = None
    trace_lines: bool = False
    seed: int | None = None


@dataclass
class TestResult:
    """Outcome of one test; `index` is its position in EvalRequest.tests."""

    __test__ = False  # not a pytest class

    index: int
    passed: bool
    error_kind: ErrorKind
    message: str
    runtime_ms: float
    # Lines of the candidate's functions its own process says this test ran (EvalRequest.
    # trace_lines): untrusted, and empty where not asked for or not reported.
    executed_lines: frozenset[int] = frozenset()


@dataclass
class EvalResult:
    """Everything the sandbox learnt about one candidate."""

    tests_passed: int
    tests_total: int
    outcomes: list[TestResult]
    error_kind: ErrorKind
    error_message: str
    runtime_ms: float
    stdout: str
    flags: list[str]  # patched_builtins, output_truncated, weak_isolation, ...

    @property
    def pass_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0
