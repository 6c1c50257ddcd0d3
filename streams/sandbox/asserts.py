"""Splitting MBPP asserts so that expected values stay in the trusted host.

`assert <expr> == <literal>` (either side literal) becomes ("expr", <expr>): the
sandbox evaluates only <expr> and returns repr() of its value, and the host
compares `ast.literal_eval(repr) == literal`. A candidate cannot read the expected
value, and cannot fake a pass with an object whose __eq__ always says yes.
Every other assert runs whole inside the sandbox ("assert"); its verdict comes
from the candidate's own process, so a candidate that forges the result channel
could fake it (the host flags duplicate or malformed reports, not a clean forgery).
"""

import ast
from dataclasses import dataclass
from typing import Any, Literal

from streams.sandbox.errors import InvalidRequest


@dataclass(frozen=True)
class PreparedTest:
    kind: Literal["expr", "assert"]
    source: str  # what the sandbox evaluates (an expression) or executes (a statement)
    expected: Any = None  # only for kind == "expr"; never sent to the sandbox


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def prepare_test(test: str) -> PreparedTest:
    """Split one assert statement; raise InvalidRequest if it is not valid Python."""
    try:
        tree = ast.parse(test.strip())
    except SyntaxError as exc:
        raise InvalidRequest(
            f"test is not valid Python: {test[:200]!r}: {exc}"
        ) from exc
    body = tree.body
    if len(body) == 1 and isinstance(body[0], ast.Assert):
        check = body[0].test
        if (
            isinstance(check, ast.Compare)
            and len(check.ops) == 1
            and isinstance(check.ops[0], ast.Eq)
        ):
            left, right = check.left, check.comparators[0]
            for expr, other in ((left, right), (right, left)):
                is_literal, expected = _literal(other)
                if is_literal and not _literal(expr)[0]:
                    return PreparedTest("expr", ast.unparse(expr), expected)
    return PreparedTest("assert", ast.unparse(tree))


def parse_value(text: str) -> tuple[bool, Any]:
    """Read back a repr() sent by the sandbox; (False, None) if it is not a literal."""
    try:
        return True, ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
