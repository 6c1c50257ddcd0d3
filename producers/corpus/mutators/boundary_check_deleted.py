"""boundary_check_deleted: an `if` guard whose body leaves early (`return`, `raise`,
`continue`, `break`) deleted, so the edge case it handled falls through."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import code_of

_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _last_small_statement(suite: cst.BaseSuite):
    if isinstance(suite, cst.SimpleStatementSuite):
        return suite.body[-1]
    last = suite.body[-1]
    return last.body[-1] if isinstance(last, cst.SimpleStatementLine) else last


def is_guard(statement: cst.CSTNode) -> bool:
    """`if cond: ...; return/raise/continue/break` with no `else`/`elif`."""
    return (isinstance(statement, cst.If) and statement.orelse is None
            and isinstance(_last_small_statement(statement.body), _EXITS))


class _Sites(FunctionVisitor):
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self.in_function or len(node.body) < 2:
            return  # deleting the only statement would leave an empty block
        for i, statement in enumerate(node.body):
            if is_guard(statement):
                new_body = [*node.body[:i], *node.body[i + 1 :]]
                self.add(node, node.with_changes(body=new_body),
                         f"guard `if {code_of(statement.test)}:` deleted", line_node=statement)


@register
class BoundaryCheckDeleted(Mutator):
    name = "boundary_check_deleted"
    base_difficulty = 0.5

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
