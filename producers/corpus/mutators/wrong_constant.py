"""wrong_constant: a number literal changed (`n` -> `n + 1`/`n - 1`, `x` -> `2x`/`x/2` for
floats) or `True`<->`False`. Range and slice bounds are left to off_by_one."""

from __future__ import annotations

import math

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.off_by_one import range_bound_indices


def integer_variants(value: int) -> list[int]:
    return [value + 1, value - 1] if value > 0 else [value + 1]


def float_variants(value: float) -> list[float]:
    candidates = [value * 2, value / 2] if value != 0 else [1.0]
    return [v for v in candidates if math.isfinite(v) and v != 0]  # `inf` is no literal


class _Sites(FunctionVisitor):
    def __init__(self, source: ParsedSource):
        super().__init__(source)
        self._bounds: set[int] = set()  # ids of literals that are range/slice bounds

    def _mark_bound(self, expr: cst.BaseExpression) -> None:
        self._bounds.add(id(expr))
        if isinstance(expr, cst.UnaryOperation):
            self._bounds.add(id(expr.expression))

    # Parents are visited before children, so bounds are marked before their literals.
    def visit_Call(self, node: cst.Call) -> None:
        for index in range_bound_indices(node):
            self._mark_bound(node.args[index].value)

    def visit_Slice(self, node: cst.Slice) -> None:
        for bound in (node.lower, node.upper):
            if bound is not None:
                self._mark_bound(bound)

    def visit_Integer(self, node: cst.Integer) -> None:
        if self.in_function and id(node) not in self._bounds:
            for value in integer_variants(int(node.evaluated_value)):
                # Negative values only arise from 0 - 1, which integer_variants avoids.
                self.add(node, node.with_changes(value=str(value)),
                         f"constant `{node.value}` -> `{value}`")

    def visit_Float(self, node: cst.Float) -> None:
        if self.in_function and id(node) not in self._bounds:
            for value in float_variants(float(node.evaluated_value)):
                self.add(node, node.with_changes(value=repr(value)),
                         f"constant `{node.value}` -> `{value!r}`")

    def visit_Name(self, node: cst.Name) -> None:
        if self.in_function and node.value in ("True", "False"):
            other = "False" if node.value == "True" else "True"
            self.add(node, node.with_changes(value=other), f"`{node.value}` -> `{other}`")


@register
class WrongConstant(Mutator):
    name = "wrong_constant"
    base_difficulty = 0.3

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
