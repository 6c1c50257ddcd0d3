"""The execution-path signal: the share of the candidate's function lines its passing tests ran.

The lines come from a tracer inside the candidate's own process (streams/sandbox/
line_trace.py), which the candidate can reach and forge. So only what the judge vouches for
bounds it: lines count only on tests the judge saw pass, only lines that are executable lines
of the candidate's functions (computed here from the source, never from the sandbox), so the
share stays in [0, 1] however many lines are claimed; and code that touches tracing APIs has
its coverage voided. What is left is a tie-breaker between candidates that pass the same
tests, never worth a test.
"""

from __future__ import annotations

import ast
import dis
import warnings
from collections.abc import Iterable
from typing import Protocol

from streams.sandbox.line_trace import function_codes

# Attribute (or from-imported) names that reach the tracing and frame machinery: setting,
# reading or replacing a tracer, or a frame's own trace hooks.
TRACER_NAMES = frozenset({
    "settrace", "setprofile", "gettrace", "getprofile", "settrace_all_threads", "setprofile_all_threads",
    "call_tracing", "monitoring", "_getframe", "_current_frames", "f_trace", "f_trace_lines", "f_trace_opcodes",
})
# Modules that install or drive tracers.
TRACER_MODULES = frozenset({"coverage", "trace", "bdb", "pdb", "cProfile", "profile"})
COMPILE_ERRORS = (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError)


class Outcome(Protocol):
    """What this module reads of a test's outcome (streams.sandbox.TestResult)."""

    passed: bool
    executed_lines: frozenset[int]


def uses_tracer(code: str) -> bool:
    """Whether the code names a tracing API (TRACER_NAMES as an attribute, an imported name or
    a string, as in getattr(sys, "settrace")) or imports a tracing module. A plain variable of
    such a name is no use of the API: only an import or an attribute reaches it. Statically: code
    that builds such a name at run time is not caught, which is why the signal stays a
    tie-breaker. The standard `ast` suffices here: no formatting is read."""
    try:
        tree = ast.parse(code)
    except COMPILE_ERRORS:
        return False  # never ran: no coverage to void
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in TRACER_NAMES:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in TRACER_NAMES:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] in TRACER_MODULES for m in modules):
                return True
            if any(a.name in TRACER_NAMES for a in node.names):
                return True
    return False


def executable_lines(code: str) -> frozenset[int]:
    """The lines of the candidate's functions that a line tracer can report: every line with
    bytecode after the function's RESUME (the prologue before it, on the `def` line, raises no
    line event). Docstrings, `global`, `else:` and `finally:` lines hold no bytecode; a
    one-line `def f(x): return x` keeps its line. Empty for code that does not compile."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the candidate's SyntaxWarnings are not the worker's to log
        try:
            module = compile(code, "<candidate>", "exec")
        except COMPILE_ERRORS:
            return frozenset()
    lines: set[int] = set()
    for function in function_codes(module):
        resume = next((i.offset for i in dis.get_instructions(function) if i.opname == "RESUME"), -1)
        lines.update(line for start, _, line in function.co_lines() if line is not None and start > resume)
    return frozenset(lines)


def line_coverage(executable: frozenset[int], outcomes: Iterable[Outcome]) -> float:
    """Share of `executable` that tests the judge saw pass ran, together."""
    if not executable:
        return 0.0
    ran: set[int] = set()
    for outcome in outcomes:
        if outcome.passed:
            ran |= outcome.executed_lines
    return len(ran & executable) / len(executable)
