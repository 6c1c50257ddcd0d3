"""indentation_removed and indentation_misplaced: a statement moved across the edge of a
block by one indentation level. Both keep the code parseable but change what it does.

- removed:   the last statement of an `if`/`for`/`while`/`with` body dedented to run
             after the block;
- misplaced: the statement right after such a block indented into the block's body.

Only blocks without `else`/`elif` qualify (moving a statement across an `else` would not
parse), and only blocks inside a function (the statement stays in the function).
"""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import code_of

_BLOCK_STATEMENTS = (cst.If, cst.For, cst.While, cst.With)


def movable_block(statement: cst.CSTNode) -> bool:
    """A compound statement with one indented body and no `else`/`elif`."""
    return (isinstance(statement, _BLOCK_STATEMENTS)
            and isinstance(statement.body, cst.IndentedBlock)
            and getattr(statement, "orelse", None) is None)


def with_body(block_statement, statements) -> cst.CSTNode:
    return block_statement.with_changes(body=block_statement.body.with_changes(body=statements))


def _first_line(statement: cst.CSTNode) -> str:
    return code_of(statement).splitlines()[0]


class _RemovedSites(FunctionVisitor):
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self.in_function:
            return
        for i, statement in enumerate(node.body):
            if not movable_block(statement) or len(statement.body.body) < 2:
                continue  # a one-statement body would be left empty
            *kept, moved = statement.body.body
            new_body = [*node.body[:i], with_body(statement, kept), moved, *node.body[i + 1 :]]
            self.add(node, node.with_changes(body=new_body),
                     f"`{_first_line(moved)}` dedented out of `{_first_line(statement)}`",
                     line_node=moved)


class _MisplacedSites(FunctionVisitor):
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self.in_function:
            return
        for i in range(len(node.body) - 1):
            statement, moved = node.body[i], node.body[i + 1]
            if not movable_block(statement):
                continue
            grown = with_body(statement, [*statement.body.body, moved])
            new_body = [*node.body[:i], grown, *node.body[i + 2 :]]
            self.add(node, node.with_changes(body=new_body),
                     f"`{_first_line(moved)}` indented into `{_first_line(statement)}`",
                     line_node=moved)


@register
class IndentationRemoved(Mutator):
    name = "indentation_removed"
    base_difficulty = 0.45

    def sites(self, source: ParsedSource):
        return _RemovedSites(source).collect()


@register
class IndentationMisplaced(Mutator):
    name = "indentation_misplaced"
    base_difficulty = 0.45

    def sites(self, source: ParsedSource):
        return _MisplacedSites(source).collect()
