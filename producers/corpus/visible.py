"""The test a task shows in its prompt, and what went wrong there (the error context).

The rule: a bug that fails at least two of its function's tests shows the first one it fails
(in test order). That test moves from the hidden tests (``tests``, the scored ones) to
``visible_tests``, and ``error_context`` keeps what went wrong on it. A failing test always
stays hidden, so the hidden tests alone still tell the bug from the reference. A bug that
fails a single test (every bug of a one-test function included) shows none and has no error
context: showing its only failing test would leave hidden tests the bug passes.

The choice is made when the corpus is built, whatever a prompt later shows, so training and
evaluation score the same hidden tests with or without the error in the prompt.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Sequence

from producers.corpus.runner import TestFailure

# Longer messages keep their end: the exception's last words name what went wrong.
MAX_ERROR_CHARS = 500
# Object addresses change from run to run; the corpus must not (same seed -> same bytes).
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# A timeout's message carries the measured time (or which limit fired); its kind is what the
# model can use.
TIMEOUT_MESSAGE = "timeout: the test did not finish within the time limit"


@dataclass(frozen=True)
class TestSplit:
    """The tests of one task: hidden (scored), visible (shown), and the visible one's error."""

    __test__ = False

    hidden: tuple[str, ...]
    visible: tuple[str, ...] = ()
    error_context: str = ""


def stable_message(failure: TestFailure) -> str:
    """What went wrong on one test, with what varies between runs taken out, cut to its tail."""
    if failure.error_kind == "timeout":
        return TIMEOUT_MESSAGE
    message = sorted_sets(_ADDRESS.sub("0x...", failure.message.strip()))
    return message if len(message) <= MAX_ERROR_CHARS else "..." + message[-MAX_ERROR_CHARS:]


def sorted_sets(message: str) -> str:
    """An "expected X, got Y" message with the sets in X and Y written in sorted order: a set's
    repr follows the hash seed of the process that wrote it, and the corpus must not. A side
    that is not a whole literal (cut short by the sandbox) stays as it is."""
    if not message.startswith("expected "):
        return message
    for match in re.finditer(", got ", message):
        expected, got = message[len("expected "):match.start()], message[match.end():]
        parsed = _literal(expected)
        if parsed is not None:
            again = _literal(got)
            return f"expected {_sorted_repr(parsed[0])}, got {got if again is None else _sorted_repr(again[0])}"
    return message


def _literal(text: str) -> tuple[object] | None:
    try:
        return (ast.literal_eval(text),)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _sorted_repr(value: object) -> str:
    """repr() with every set's elements in sorted order (of their own sorted reprs)."""
    if isinstance(value, set) and value:  # literal_eval makes no frozenset
        return "{" + ", ".join(sorted(_sorted_repr(v) for v in value)) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_sorted_repr, value)) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_sorted_repr, value)) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_sorted_repr(k)}: {_sorted_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def split_tests(tests: Sequence[str], failures: Sequence[TestFailure]) -> TestSplit:
    """Hidden and visible tests of a bug with ``failures`` (see the module's rule)."""
    failing = sorted(failures, key=lambda f: f.index)
    if len(failing) < 2:
        return TestSplit(tuple(tests))
    shown = failing[0]
    hidden = tuple(t for i, t in enumerate(tests) if i != shown.index)
    return TestSplit(hidden, (tests[shown.index],), stable_message(shown))


def compile_failures(code: str, tests: Sequence[str]) -> tuple[TestFailure, ...]:
    """Every test fails on code that does not compile, with the compiler's message (worded as
    the sandbox words a load error: exception name and message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of the sources, e.g. "\\d"
        try:
            compile(code, "<candidate>", "exec")
        except (SyntaxError, ValueError) as err:
            message = f"{type(err).__name__}: {err}"
        else:
            raise ValueError("the code compiles: its failures come from running its tests")
    return tuple(TestFailure(i, "syntax", message) for i in range(len(tests)))
