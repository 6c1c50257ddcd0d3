"""operator_swap: a comparison, arithmetic or boolean operator replaced by its near twin
(`<`<->`<=`, `>`<->`>=`, `+`<->`-`, `==`<->`!=`, `and`<->`or`; also `+=`<->`-=`)."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register

SWAPS: dict[type, tuple[type, str, str]] = {
    cst.LessThan: (cst.LessThanEqual, "<", "<="),
    cst.LessThanEqual: (cst.LessThan, "<=", "<"),
    cst.GreaterThan: (cst.GreaterThanEqual, ">", ">="),
    cst.GreaterThanEqual: (cst.GreaterThan, ">=", ">"),
    cst.Equal: (cst.NotEqual, "==", "!="),
    cst.NotEqual: (cst.Equal, "!=", "=="),
    cst.Add: (cst.Subtract, "+", "-"),
    cst.Subtract: (cst.Add, "-", "+"),
    cst.AddAssign: (cst.SubtractAssign, "+=", "-="),
    cst.SubtractAssign: (cst.AddAssign, "-=", "+="),
    cst.And: (cst.Or, "and", "or"),
    cst.Or: (cst.And, "or", "and"),
}


def swapped(operator: cst.CSTNode) -> tuple[cst.CSTNode, str] | None:
    """The twin operator with the same spacing, and a description; None if not swappable."""
    entry = SWAPS.get(type(operator))
    if entry is None:
        return None
    twin, old, new = entry
    spacing = {"whitespace_before": operator.whitespace_before,
               "whitespace_after": operator.whitespace_after}
    return twin(**spacing), f"`{old}` -> `{new}`"


class _Sites(FunctionVisitor):
    # The parent node is the target, not the operator: operator nodes carry no identity
    # of their own that is guaranteed unique in the tree.
    def _offer(self, node: cst.CSTNode, operator: cst.CSTNode, rebuild) -> None:
        if not self.in_function:
            return
        twin = swapped(operator)
        if twin is not None:
            self.add(node, rebuild(twin[0]), twin[1])

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        self._offer(node, node.operator, lambda op: node.with_changes(operator=op))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._offer(node, node.operator, lambda op: node.with_changes(operator=op))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._offer(node, node.operator, lambda op: node.with_changes(operator=op))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._offer(node, node.operator, lambda op: node.with_changes(operator=op))


@register
class OperatorSwap(Mutator):
    name = "operator_swap"
    base_difficulty = 0.3

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
