"""Small libcst helpers shared by several mutators."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from producers.corpus.mutators.base import ParsedSource

_EMPTY_MODULE = cst.Module(body=[])

# Expressions that bind at least as tightly as `+`/`-`, so `expr + 1` keeps its meaning
# without parentheses; anything else (`a if c else b`, `x << y`, `not x`, ...) is wrapped.
_TIGHT_BINARY_OPERATORS = (
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
    cst.Power, cst.MatrixMultiply,
)
_ATOMS = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
    cst.SimpleString, cst.List, cst.Tuple, cst.Dict, cst.Set,
)


def code_of(node: cst.CSTNode) -> str:
    """The source text of a node on its own."""
    return _EMPTY_MODULE.code_for_node(node).strip()


def parenthesize(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``(expr)`` unless it already has parentheses."""
    if expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def as_operand(expr: cst.BaseExpression, for_boolean_not: bool = False) -> cst.BaseExpression:
    """``expr`` made safe to use as an operand of ``+``/``-`` (or of ``not``)."""
    if expr.lpar or isinstance(expr, _ATOMS):
        return expr
    if for_boolean_not:
        # `not` binds more loosely than comparisons and arithmetic, more tightly than and/or.
        needs = isinstance(expr, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr))
        return parenthesize(expr) if needs else expr
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _TIGHT_BINARY_OPERATORS):
        return expr
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return expr
    return parenthesize(expr)


def int_value(expr: cst.BaseExpression) -> int | None:
    """The value of an integer literal, ``-1`` included; None for anything else."""
    if isinstance(expr, cst.Integer) and not expr.lpar:
        return int(expr.evaluated_value)
    if (isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus)
            and isinstance(expr.expression, cst.Integer) and not expr.lpar):
        return -int(expr.expression.evaluated_value)
    return None


def int_literal(value: int) -> cst.BaseExpression:
    if value < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(-value)))
    return cst.Integer(str(value))


def negate(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``not expr``, or ``expr`` when it already is ``not expr``."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not) and not expr.lpar:
        return expr.expression
    return cst.UnaryOperation(operator=cst.Not(), expression=as_operand(expr, for_boolean_not=True))


def _is_variable(assignment) -> bool:
    # Parameters and assigned names are variables; nested defs, classes and imports are not
    # what a "wrong variable" bug swaps in.
    return isinstance(assignment, Assignment) and not isinstance(
        assignment.node, (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom)
    )


def function_variables(source: ParsedSource, scope: FunctionScope) -> dict[str, int]:
    """Variables of a function scope -> line of their first binding, sorted by name."""
    first_line: dict[str, int] = {}
    for assignment in scope.assignments:
        if not _is_variable(assignment):
            continue
        line = source.line_of(assignment.node)
        first_line[assignment.name] = min(line, first_line.get(assignment.name, line))
    return dict(sorted(first_line.items()))


def enclosing_function_scope(source: ParsedSource, node: cst.CSTNode) -> FunctionScope | None:
    scope = source.scopes.get(node)
    while scope is not None and not isinstance(scope, FunctionScope):
        parent = scope.parent
        scope = None if parent is scope else parent
    return scope


def at_least_one_space(whitespace):
    """`if(x)` parses with no space after the keyword; `ifnot (x)` would not: add one."""
    if isinstance(whitespace, cst.SimpleWhitespace) and whitespace.value == "":
        return cst.SimpleWhitespace(" ")
    return whitespace
