"""wrong_return: the value of a `return` changed: to `None`, to another variable of the
function bound before the `return` (or, for a computed value, to one of the parameters),
or negated when it is boolean."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import Assignment

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import (
    at_least_one_space,
    code_of,
    enclosing_function_scope,
    function_variables,
    negate,
)


def _looks_boolean(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Comparison, cst.BooleanOperation)):
        return True
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not)


def _parameters(scope) -> list[str]:
    names = {a.name for a in scope.assignments
             if isinstance(a, Assignment) and isinstance(a.node, cst.Param)}
    return sorted(names)


class _Sites(FunctionVisitor):
    def visit_Return(self, node: cst.Return) -> None:
        value = node.value
        if not self.in_function or value is None:
            return
        for new_value, description in self._alternatives(node, value):
            new_return = node.with_changes(
                value=new_value,
                whitespace_after_return=at_least_one_space(node.whitespace_after_return))
            self.add(node, new_return, f"return `{code_of(value)}` -> `{description}`")

    def _alternatives(self, node: cst.Return, value: cst.BaseExpression):
        if isinstance(value, cst.Name) and value.value in ("True", "False"):
            other = "False" if value.value == "True" else "True"
            yield cst.Name(other), other
            return
        if not (isinstance(value, cst.Name) and value.value == "None"):
            yield cst.Name("None"), "None"
        if _looks_boolean(value):
            negated = negate(value)
            yield negated, code_of(negated)
        scope = enclosing_function_scope(self.source, node)
        if scope is None:
            return
        if isinstance(value, cst.Name):
            line = self.source.line_of(node)
            others = [name for name, bound_at in function_variables(self.source, scope).items()
                      if name != value.value and bound_at < line]
        else:
            # A computed value: the classic slip is handing back an input unchanged.
            others = _parameters(scope)
        for name in others:
            yield cst.Name(name), name


@register
class WrongReturn(Mutator):
    name = "wrong_return"
    base_difficulty = 0.35

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
