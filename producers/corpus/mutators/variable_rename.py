"""variable_rename: one use of a variable replaced by another variable of the same
function that is already bound at that point (a parameter or an earlier assignment)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import enclosing_function_scope, function_variables


def _local_referent_scope(access) -> FunctionScope | None:
    """The function scope a name use reads from, if it reads a plain local variable."""
    scopes = {id(r.scope): r.scope for r in access.referents}
    if len(scopes) != 1 or not all(isinstance(r, Assignment) for r in access.referents):
        return None
    scope = next(iter(scopes.values()))
    return scope if isinstance(scope, FunctionScope) else None


class _Sites(FunctionVisitor):
    def __init__(self, source: ParsedSource):
        super().__init__(source)
        self._variables: dict[int, dict[str, int]] = {}  # per scope, computed once

    def _variables_of(self, scope: FunctionScope) -> dict[str, int]:
        if id(scope) not in self._variables:
            self._variables[id(scope)] = function_variables(self.source, scope)
        return self._variables[id(scope)]

    def visit_Name(self, node: cst.Name) -> None:
        if not self.in_function:
            return
        scope = self.source.scopes.get(node)
        if scope is None:
            return
        for access in scope.accesses[node]:
            if access.node is not node:
                continue
            function_scope = _local_referent_scope(access)
            if function_scope is None or function_scope is not enclosing_function_scope(self.source, node):
                continue
            line = self.source.line_of(node)
            variables = self._variables_of(function_scope)
            if node.value not in variables:
                continue  # e.g. a nested function's name
            for other, bound_at in variables.items():
                # Bound on an earlier line (parameters are bound on the `def` line).
                if other != node.value and bound_at < line:
                    self.add(node, node.with_changes(value=other), f"`{node.value}` -> `{other}`")
            return


@register
class VariableRename(Mutator):
    name = "variable_rename"
    base_difficulty = 0.45

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()
