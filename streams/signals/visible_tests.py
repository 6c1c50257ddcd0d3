"""Read the literal calls out of MBPP-style assert statements.

`assert f(1, [2, 3]) == 5` gives `VisibleCall(args=(1, [2, 3]), expected=5)`. Only
literal arguments are understood (`ast.literal_eval`); asserts calling with variables
from setup code are skipped, since their values are unknown without running it.
"""

import ast
import builtins
from dataclasses import dataclass
from typing import Any


class _NoValue:
    """Marks a missing literal (None is itself a valid expected value)."""

    def __repr__(self) -> str:
        return "<no value>"


_NO_VALUE = _NoValue()


@dataclass(frozen=True, slots=True)
class VisibleCall:
    """One call of the entry point in a visible test."""

    args: tuple[Any, ...]
    expected: Any = _NO_VALUE  # the literal it is compared with, when `==` to a literal

    @property
    def has_expected(self) -> bool:
        return self.expected is not _NO_VALUE


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE


def _is_entry_call(node: ast.AST, entry_point: str | None) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return False
    if entry_point is None:
        # Without a name, the first call of something that is not a builtin
        # (`set(...)`, `sorted(...)` wrap the real call in many MBPP asserts).
        return not hasattr(builtins, node.func.id)
    return node.func.id == entry_point


def _find_call(tree: ast.AST, entry_point: str | None) -> ast.Call | None:
    for node in ast.walk(tree):
        if _is_entry_call(node, entry_point):
            return node  # type: ignore[return-value]
    return None


def _expected_of(test: ast.expr, call: ast.Call) -> Any:
    """The literal on the other side of `call == literal`, if the assert has that shape."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
    ):
        left, right = test.left, test.comparators[0]
        if left is call:
            return _literal(right)
        if right is call:
            return _literal(left)
    return _NO_VALUE


def parse_visible_tests(
    tests: list[str], entry_point: str | None = None
) -> list[VisibleCall]:
    """The literal calls of `entry_point` in the assert strings, in order."""
    calls = []
    for source in tests:
        try:
            tree = ast.parse(source.strip())
        except SyntaxError:
            continue
        for statement in tree.body:
            if not isinstance(statement, ast.Assert):
                continue
            call = _find_call(statement.test, entry_point)
            if call is None or call.keywords:
                continue
            args = tuple(_literal(a) for a in call.args)
            if any(a is _NO_VALUE for a in args):
                continue
            calls.append(
                VisibleCall(args=args, expected=_expected_of(statement.test, call))
            )
    return calls
