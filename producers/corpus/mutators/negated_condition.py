"""negated_condition: the condition of an `if`/`elif`/`while`, a conditional expression or
a comprehension filter negated (`c` -> `not c`, `not c` -> `c`)."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import at_least_one_space, code_of, negate


class _Sites(FunctionVisitor):
    def _offer_spaced(self, node, space_field: str) -> None:
        if not self.in_function:
            return
        # `while(x):` has no space after the keyword; `whilenot (x):` would not parse.
        space = at_least_one_space(getattr(node, space_field))
        negated = node.with_changes(test=negate(node.test), **{space_field: space})
        self.add(node, negated, f"condition `{code_of(node.test)}` negated", line_node=node.test)

    def visit_If(self, node: cst.If) -> None:
        self._offer_spaced(node, "whitespace_before_test")

    def visit_While(self, node: cst.While) -> None:
        self._offer_spaced(node, "whitespace_after_while")

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._offer_spaced(node, "whitespace_before_test")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._offer_spaced(node, "whitespace_after_if")


@register
class NegatedCondition(Mutator):
    name = "negated_condition"
    base_difficulty = 0.3

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
