"""off_by_one: a bound of `range(...)` or of a slice moved by one (`n` -> `n + 1`/`n - 1`)."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import as_operand, code_of, int_literal, int_value


def shifted(bound: cst.BaseExpression, delta: int) -> cst.BaseExpression:
    """``bound + delta`` written the way a person would: ``3`` -> ``4``, ``n + 1`` -> ``n``,
    ``n`` -> ``n - 1``."""
    value = int_value(bound)
    if value is not None:
        return int_literal(value + delta)
    if (isinstance(bound, cst.BinaryOperation) and not bound.lpar
            and isinstance(bound.operator, (cst.Add, cst.Subtract))
            and int_value(bound.right) is not None and int_value(bound.right) >= 0):
        sign = 1 if isinstance(bound.operator, cst.Add) else -1
        offset = sign * int_value(bound.right) + delta
        if offset == 0:
            return bound.left
        operator = cst.Add if offset > 0 else cst.Subtract
        return bound.with_changes(
            operator=operator(whitespace_before=bound.operator.whitespace_before,
                              whitespace_after=bound.operator.whitespace_after),
            right=cst.Integer(str(abs(offset))))
    operator = cst.Add() if delta > 0 else cst.Subtract()
    return cst.BinaryOperation(left=as_operand(bound), operator=operator,
                               right=cst.Integer(str(abs(delta))))


def range_bound_indices(call: cst.Call) -> list[int]:
    """Argument positions of `range(...)` that are bounds (start, stop; never the step)."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "range"):
        return []
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return []
    return {1: [0], 2: [0, 1], 3: [0, 1]}.get(len(call.args), [])


class _Sites(FunctionVisitor):
    def visit_Call(self, node: cst.Call) -> None:
        if not self.in_function:
            return
        for index in range_bound_indices(node):
            arg = node.args[index]
            for delta in (1, -1):
                new_value = shifted(arg.value, delta)
                self.add(arg, arg.with_changes(value=new_value),
                         f"range bound `{code_of(arg.value)}` -> `{code_of(new_value)}`")

    def visit_Slice(self, node: cst.Slice) -> None:
        if not self.in_function:
            return
        for field in ("lower", "upper"):
            bound = getattr(node, field)
            if bound is None:
                continue
            for delta in (1, -1):
                new_value = shifted(bound, delta)
                self.add(node, node.with_changes(**{field: new_value}),
                         f"slice bound `{code_of(bound)}` -> `{code_of(new_value)}`")


@register
class OffByOne(Mutator):
    name = "off_by_one"
    base_difficulty = 0.35

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
