"""A fingerprint of a program's code that survives renaming its locals and reformatting.

Two programs share a fingerprint when their syntax trees are equal once formatting,
comments and docstrings are dropped (the tree has none of them) and every function's
parameters and locals are renamed by the order in which they are bound. A reviewed hack
is recognised in a later rollout that renamed its variables or ran it through a
formatter; a change of one operator or constant is another program.

Module-level names (the entry point, globals, imports), attributes and builtins keep
their names: they are what the code calls and is called by, not a private choice.

The standard library's ``ast`` is enough here: a fingerprint needs the tree and not the
source's layout, which is what libcst would add. It is part of the contract of the
``reviews`` topic (``code_fingerprint``), so it lives beside the schemas, where the
dashboard and the feedback agent alike can compute it.
"""

from __future__ import annotations

import ast
import hashlib


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FINGERPRINT_HEX_CHARS = 32


def code_fingerprint(code: str) -> str | None:
    """The hex fingerprint of ``code``; None when it does not parse."""
    try:
        tree = ast.parse(code.replace("\r\n", "\n"))
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None
    canonical = _CanonicalNames().visit(_without_docstrings(tree))
    text = ast.dump(canonical, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_HEX_CHARS]


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]  # a body must keep a statement
    return tree


def _arguments(args: ast.arguments) -> list[str]:
    every = [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
             *([args.kwarg] if args.kwarg else [])]
    return [a.arg for a in every]


def _own_nodes(scope: ast.AST):
    """The nodes of a function's body in source order, not entering nested functions or
    classes (they bind names of their own) but yielding the nested node itself."""
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (*_SCOPES, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def bound_locals(scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    """The names a function binds for itself, parameters first, then in source order."""
    declared_elsewhere: set[str] = set()
    names = list(dict.fromkeys(_arguments(scope.args)))
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared_elsewhere.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.append(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.append(node.name)
    return [n for n in dict.fromkeys(names) if n not in declared_elsewhere]


class _CanonicalNames(ast.NodeTransformer):
    """Renames each function's locals to ``_v<depth>_<index>``; inner scopes see the outer
    mapping, so a closure reading an outer local follows its rename."""

    def __init__(self) -> None:
        self._mapping: dict[str, str] = {}
        self._depth = 0

    def _enter(self, node):
        outer, self._mapping = self._mapping, dict(self._mapping)
        self._depth += 1
        for index, name in enumerate(bound_locals(node)):
            self._mapping[name] = f"_v{self._depth}_{index}"
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                    *([node.args.vararg] if node.args.vararg else []), *([node.args.kwarg] if node.args.kwarg else [])]:
            arg.arg = self._mapping[arg.arg]
        # defaults and decorators are evaluated in the enclosing scope
        node.args.defaults = [self._outer_visit(outer, d) for d in node.args.defaults]
        node.args.kw_defaults = [d if d is None else self._outer_visit(outer, d) for d in node.args.kw_defaults]
        if isinstance(node, ast.Lambda):
            node.body = self.visit(node.body)
        else:
            node.decorator_list = [self._outer_visit(outer, d) for d in node.decorator_list]
            node.body = [self.visit(statement) for statement in node.body]
            node.returns = None  # annotations are not behaviour
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                arg.annotation = None
        self._mapping = outer
        self._depth -= 1
        return node

    def _outer_visit(self, outer: dict[str, str], node: ast.AST) -> ast.AST:
        inner, self._mapping = self._mapping, outer
        try:
            return self.visit(node)
        finally:
            self._mapping = inner

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._mapping.get(node.name, node.name)
        return self._enter(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return self._enter(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self._mapping.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._mapping.get(node.id, node.id)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self._mapping.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._mapping.get(node.arg, node.arg)
        return node
