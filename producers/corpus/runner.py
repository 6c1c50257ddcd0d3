"""Running a function's tests: the build asks a ``TestRunner`` and the sandbox answers.

The build needs how many tests passed and, for the error shown in a prompt, what went wrong
on each failing test; keeping the runner a parameter keeps the build logic free of process
management and lets any sandbox stand in.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from producers.corpus.functions import SourceFunction


@dataclass(frozen=True)
class TestJob:
    """``code`` (a reference or a mutant) against the hidden tests of ``function``."""

    __test__ = False  # a name pytest would otherwise try to collect

    code: str
    function: SourceFunction


@dataclass(frozen=True)
class TestFailure:
    """One failing test: its index in ``tests`` and what the sandbox said went wrong there
    ("expected 3, got 4", "ZeroDivisionError: division by zero", ...)."""

    __test__ = False

    index: int
    error_kind: str  # the sandbox's ErrorKind value for this test
    message: str


@dataclass(frozen=True)
class TestOutcome:
    __test__ = False

    tests_passed: int
    tests_total: int
    error_kind: str  # the sandbox's ErrorKind value, e.g. "ok", "wrong_answer", "timeout"
    failures: tuple[TestFailure, ...] = ()  # the failing tests, in test order

    @property
    def passed_all(self) -> bool:
        return self.tests_total > 0 and self.tests_passed == self.tests_total


TestRunner = Callable[[Sequence[TestJob]], list[TestOutcome]]


@contextmanager
def sandbox_runner(workers: int = 2, timeout_s: float = 5.0) -> Iterator[TestRunner]:
    """A ``TestRunner`` backed by the project's sandbox pool, open for the ``with`` block."""
    # Imported here so that building tasks offline (tests of the mutators, `show`) does not
    # need the sandbox's dependencies.
    from streams.sandbox import EvalRequest, SandboxConfig, SandboxPool

    with SandboxPool(SandboxConfig(workers=workers, timeout_s=timeout_s)) as pool:
        def run(jobs: Sequence[TestJob]) -> list[TestOutcome]:
            requests = [
                EvalRequest(code=job.code, tests=list(job.function.tests),
                            entry_point=job.function.entry_point,
                            setup_code=job.function.test_setup_code,
                            imports=list(job.function.test_imports))
                for job in jobs
            ]
            return [TestOutcome(r.tests_passed, r.tests_total, _kind(r.error_kind),
                                tuple(TestFailure(o.index, _kind(o.error_kind), o.message)
                                      for o in r.outcomes if not o.passed))
                    for r in pool.evaluate_many(requests)]

        yield run


def _kind(error_kind) -> str:
    return getattr(error_kind, "value", str(error_kind))
