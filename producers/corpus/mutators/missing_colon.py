"""missing_colon: the colon ending a block header (`def`, `if`, `for`, `else`, ...) deleted.
The only syntax bug: libcst cannot hold code that does not parse, so it locates the colon
and the edit is made on the text."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import (
    FunctionVisitor,
    Mutator,
    ParsedSource,
    TextEditSite,
    register,
)


class _Sites(FunctionVisitor):
    def __init__(self, source: ParsedSource):
        super().__init__(source)
        self._lines = source.code.splitlines()

    def on_visit(self, node: cst.CSTNode) -> bool:
        descend = super().on_visit(node)
        body = getattr(node, "body", None)
        # on_visit has just run visit_FunctionDef, so a `def` header itself counts as inside.
        if self.in_function and isinstance(body, cst.BaseSuite):
            # The whitespace-inclusive range of a body starts right after the header's colon.
            start = self.source.inclusive_positions[body].start
            line_text = self._lines[start.line - 1]
            column = start.column - 1
            if column >= 0 and line_text[column] == ":":
                self.sites.append(TextEditSite(
                    start.line, column, 1,
                    f"line {start.line}: colon of `{line_text[: column + 1].strip()}` deleted"))
        return descend


@register
class MissingColon(Mutator):
    name = "missing_colon"
    base_difficulty = 0.1
    keeps_valid_syntax = False

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
