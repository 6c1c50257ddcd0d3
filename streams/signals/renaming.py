"""Harmless renames of a program and its tests; nothing is executed here.

- `rename_entry_point`: the function `old` called `new` everywhere (definition, calls,
  recursion), in the code and the tests alike.
- `rename_program`: the same, plus the entry point's parameters and local variables given
  fresh names, consistently: every use, nested functions reading them included, and the
  keyword arguments of calls of the entry point (`f(a=1)` in a test) with them. A
  correct program keeps its behaviour; one keyed on its own names does not.

The locals are found with libcst's scope analysis (`ScopeProvider`), so globals,
builtins, attributes, names a nested scope binds for itself (a lambda's or
comprehension's own variable, a nested function's own local of the same name) are never
touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import Assignment, FunctionScope, MetadataWrapper, ScopeProvider

from streams.signals.errors import SignalInputError
from streams.signals.syntax import parse_cst

# A function reading its own frame by name (`locals()['x']`, `eval('x')`) would change
# behaviour under a rename; its parameters and locals are left as they are.
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir", "_getframe", "currentframe"})
LOCAL_PREFIX = "renamed_var_"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RenamedProgram:
    """A program, its tests and setup code after a harmless rename.

    names: old -> new for the entry point and every renamed parameter and local.
    """

    code: str
    tests: list[str]
    setup_code: str
    entry_point: str
    names: dict[str, str] = field(default_factory=dict)


class _EntryRenamer(cst.CSTTransformer):
    """Renames every name `old` to `new`, but not attributes (`x.old`) or keyword
    arguments (`g(old=1)`), which belong to other objects.

    By name rather than by scope: the entry point is a module-level name the tests read
    from outside the module, and a local of the same name elsewhere renamed along with it
    keeps the program's meaning (it is renamed consistently in its own scope too).
    """

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.new)
            if original_node.value == self.old
            else updated_node
        )

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)


def _parse(code: str) -> cst.Module:
    tree = parse_cst(code)
    if tree is None:
        raise SignalInputError(f"cannot parse for renaming: {code[:80]!r}")
    return tree


def _rename_in(code: str, old: str, new: str) -> str:
    return _parse(code).visit(_EntryRenamer(old, new)).code


def rename_entry_point(
    code: str, tests: list[str], old: str, new: str
) -> tuple[str, list[str]]:
    """The code and tests with the function `old` renamed to `new`, its definition and
    every reference (calls, recursion) alike; formatting is kept byte for byte (except
    leading tabs of ambiguous indentation, expanded; see `syntax.parse_cst`).

    Raises `SignalInputError` when the code or a test does not parse.
    """
    if not new.isidentifier():
        raise SignalInputError(f"not an identifier: {new!r}")
    return _rename_in(code, old, new), [_rename_in(test, old, new) for test in tests]


# --- parameters and locals ----------------------------------------------------------------


def _identifiers(sources: list[str]) -> set[str]:
    """Every word spelled in the sources (names, attributes, and words inside strings too):
    a fresh name must be none of them. Read off the text, not the trees, to spare a pass."""
    return set(_WORD.findall("\n".join(sources)))


def _reads_its_frame(function: cst.FunctionDef) -> bool:
    """Calls that read variables by their names (`locals()`, `eval`, `f"{x=}"`)."""
    hit = False

    class Look(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal hit
            hit = hit or node.value in _FRAME_READERS

        def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
            nonlocal hit
            hit = hit or node.equal is not None  # f"{x=}" prints the name

    function.visit(Look())
    return hit


class _ProgramRenamer(_EntryRenamer):
    """One pass that renames the entry point (by name), the nodes the scope analysis found
    (by identity) and the keyword arguments of calls of the entry point; keywords that no
    parameter names (gathered by `**kwargs`) are data and stay."""

    def __init__(self, old: str, new: str, by_node: dict[int, str], nonlocal_items: dict[int, str],
                 keywords: dict[str, str]) -> None:
        super().__init__(old, new)
        self.by_node, self.nonlocal_items, self.keywords = by_node, nonlocal_items, keywords

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.by_node.get(id(original_node))
        return updated_node.with_changes(value=new) if new else super().leave_Name(original_node, updated_node)

    def leave_NameItem(self, original_node: cst.NameItem, updated_node: cst.NameItem) -> cst.NameItem:
        new = self.nonlocal_items.get(id(original_node))
        return updated_node.with_changes(name=cst.Name(new)) if new else updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = original_node.func
        if not (self.keywords and isinstance(func, cst.Name) and func.value == self.old):
            return updated_node
        args = [
            a.with_changes(keyword=cst.Name(self.keywords[a.keyword.value]))
            if a.keyword is not None and a.keyword.value in self.keywords else a
            for a in updated_node.args
        ]
        return updated_node.with_changes(args=args)


def _binding_name(node: cst.CSTNode) -> cst.Name | None:
    """The Name node a binding writes: `x = ..`, a parameter, `def x`, `class x`."""
    if isinstance(node, cst.Name):
        return node
    if isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
        return node.name
    return None  # an import (`import math` binds `math`): left alone


def _plan_locals(
    wrapper: MetadataWrapper, entry_point: str, taken: set[str]
) -> tuple[dict[str, str], dict[int, str], dict[int, str], set[str]]:
    """(old -> new, Name node id -> new, nonlocal item id -> new, keyword-passable params)."""
    scopes = wrapper.resolve(ScopeProvider)
    names: dict[str, str] = {}
    by_node: dict[int, str] = {}
    nonlocal_items: dict[int, str] = {}
    keyword_params: set[str] = set()
    for statement in wrapper.module.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == entry_point):
            continue
        if _reads_its_frame(statement):
            continue
        scope = scopes[statement.body.body[0]] if statement.body.body else None
        if not isinstance(scope, FunctionScope):
            continue
        params = statement.params
        keyword_params |= {p.name.value for p in (*params.params, *params.kwonly_params)}
        by_name: dict[str, list[Assignment]] = {}
        for assignment in scope.assignments:
            by_name.setdefault(assignment.name, []).append(assignment)
        for name in sorted(by_name):
            bindings = [_binding_name(a.node) for a in by_name[name]]
            if not all(isinstance(a, Assignment) for a in by_name[name]) or None in bindings:
                continue  # bound by an import somewhere: keep the name
            if name not in names:
                names[name] = _fresh(taken, len(names))
            new = names[name]
            for binding in bindings:
                by_node[id(binding)] = new
            for assignment in by_name[name]:
                for access in assignment.references:
                    if isinstance(access.node, cst.Name):
                        by_node[id(access.node)] = new

        class Nonlocals(cst.CSTVisitor):
            """`nonlocal x` in a nested function names the entry point's `x`."""

            def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
                inner = scopes.get(node)
                for item in node.names:
                    if item.name.value in names and inner is not None and _binds_to(inner, item.name.value, scope):
                        nonlocal_items[id(item)] = names[item.name.value]

        statement.body.visit(Nonlocals())
    return names, by_node, nonlocal_items, keyword_params & set(names)


def _binds_to(inner, name: str, target: FunctionScope) -> bool:
    outer = inner.parent
    while outer is not None and outer is not outer.parent:
        if isinstance(outer, FunctionScope) and any(True for _ in outer.assignments[name]):
            return outer is target
        outer = outer.parent
    return False


def _fresh(taken: set[str], index: int) -> str:
    n = index
    while f"{LOCAL_PREFIX}{n}" in taken:
        n += 1
    name = f"{LOCAL_PREFIX}{n}"
    taken.add(name)
    return name


def rename_program(
    code: str, tests: list[str], setup_code: str, entry_point: str, new_entry_point: str
) -> RenamedProgram:
    """The program, tests and setup code with the entry point renamed and the entry
    point's parameters and locals given fresh names (`renamed_var_0`, ...), keyword
    arguments of its calls following its parameters. Formatting is kept.

    Raises `SignalInputError` when the code, a test or the setup code does not parse.
    """
    if not new_entry_point.isidentifier():
        raise SignalInputError(f"not an identifier: {new_entry_point!r}")
    trees = [_parse(code), *(_parse(t) for t in tests), _parse(setup_code)]
    taken = _identifiers([code, *tests, setup_code]) | {new_entry_point}
    wrapper = MetadataWrapper(trees[0], unsafe_skip_copy=True)
    names, by_node, nonlocal_items, keyword_params = _plan_locals(wrapper, entry_point, taken)
    renamer = _ProgramRenamer(entry_point, new_entry_point, by_node, nonlocal_items,
                              {p: names[p] for p in keyword_params})
    out = [t.visit(renamer).code for t in (wrapper.module, *trees[1:])]
    return RenamedProgram(
        code=out[0], tests=out[1:-1], setup_code=out[-1] if setup_code else "",
        entry_point=new_entry_point, names={entry_point: new_entry_point, **names},
    )
