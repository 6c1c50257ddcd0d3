"""Which bug pattern a candidate repaired, read from the AST diff buggy -> candidate.

The names are the corpus's bug patterns (the injector's vocabulary), so `R_progress` can
keep a failure history per pattern. Each name describes the *bug*; the candidate's edit
is its inverse (it adds the guard that `boundary_check_deleted` removed, re-indents what
`indentation_removed` dedented).

How: both trees (docstrings dropped) are walked side by side and every minimal
difference is labelled; one label for all differences (at most `max_pattern_edits`) is
the answer, anything else is `rewrite`. Statement moves between blocks are found first,
by comparing the statements in reading order without their nesting.
"""

import ast
import copy
from collections.abc import Iterator

from streams.signals.config import SignalConfig
from streams.signals.syntax import parse_or_none, strip_docstrings

BUG_PATTERNS = (
    "operator_swap",
    "variable_rename",
    "boundary_check_deleted",
    "argument_swap",
    "off_by_one",
    "wrong_constant",
    "negated_condition",
    "wrong_return",
    "indentation_removed",
    "indentation_misplaced",
    "missing_colon",
    "rewrite",
)
NO_CHANGE = (
    ""  # the candidate's program equals the buggy one (the `fixed_pattern` for none)
)

_OPERATOR_TYPES = (ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers")


def _same(a: ast.AST | None, b: ast.AST | None) -> bool:
    if a is None or b is None:
        return a is b
    return ast.dump(a) == ast.dump(b)


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


def _is_number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _shifted_by_one(plain: ast.AST, shifted: ast.AST) -> bool:
    """`shifted` is `plain + 1` or `plain - 1` (either order for +)."""
    if not (
        isinstance(shifted, ast.BinOp) and isinstance(shifted.op, (ast.Add, ast.Sub))
    ):
        return False
    one = lambda n: _is_number(n) and n.value == 1  # noqa: E731
    if one(shifted.right) and _same(shifted.left, plain):
        return True
    return (
        isinstance(shifted.op, ast.Add)
        and one(shifted.left)
        and _same(shifted.right, plain)
    )


def _negates(plain: ast.AST, negated: ast.AST) -> bool:
    return (
        isinstance(negated, ast.UnaryOp)
        and isinstance(negated.op, ast.Not)
        and _same(negated.operand, plain)
    )


def _adds_guard_operand(plain: ast.AST, guarded: ast.AST) -> bool:
    """`guarded` is `plain and <check>` (or `<check> and plain`)."""
    return (
        isinstance(guarded, ast.BoolOp)
        and isinstance(guarded.op, ast.And)
        and any(_same(v, plain) for v in guarded.values)
    )


def _label_replacement(
    a: ast.AST,
    b: ast.AST,
    parent: ast.AST | None,
    field: str,
    in_bound: bool,
    max_nodes: int,
) -> str:
    """Label one minimal difference: node `a` of the buggy tree became `b`.

    The corpus's conventions decide the ambiguous cases: every operator change
    (`<`->`<=`, `==`->`!=` too) is an operator_swap; a number moved by one is an
    off_by_one only as a `range(...)` or slice bound, elsewhere a wrong_constant; a
    returned value changed is a wrong_return unless one variable became another.
    """
    if isinstance(a, _OPERATOR_TYPES) and isinstance(b, _OPERATOR_TYPES):
        return "operator_swap"
    if isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return "variable_rename"
    if (
        isinstance(a, ast.Attribute)
        and isinstance(b, ast.Attribute)
        and _same(a.value, b.value)
    ):
        return "variable_rename"
    small = _size(a) + _size(b) <= max_nodes  # a large new expression is a rewrite
    if isinstance(parent, ast.Return) and field == "value":
        return "wrong_return" if small else "rewrite"
    if _is_number(a) and _is_number(b):
        return (
            "off_by_one"
            if in_bound and abs(a.value - b.value) == 1
            else "wrong_constant"
        )
    if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
        return "wrong_constant"
    if _shifted_by_one(a, b) or _shifted_by_one(b, a):
        return "off_by_one"
    if _negates(a, b) or _negates(b, a):
        return "negated_condition"
    if _adds_guard_operand(a, b):
        return "boundary_check_deleted"
    if (
        isinstance(b, ast.If)
        and not b.orelse
        and len(b.body) == 1
        and _same(b.body[0], a)
    ):
        return "boundary_check_deleted"
    return "rewrite"


def _is_bound(node: ast.AST, field: str) -> bool:
    """Whether the children of `node` under `field` are range or slice bounds."""
    if isinstance(node, ast.Slice):
        return field in ("lower", "upper")
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and field == "args"
    )


def _is_early_exit(guard: ast.If) -> bool:
    """`if cond: ...; return/raise/continue/break` without else: a guard of any size."""
    exits = (ast.Return, ast.Raise, ast.Continue, ast.Break)
    return not guard.orelse and isinstance(guard.body[-1], exits)


def _label_statement_lists(
    a: list[ast.stmt], b: list[ast.stmt], max_nodes: int
) -> Iterator[str]:
    """Blocks of different lengths: a small guard or return inserted/removed, else a rewrite."""
    prefix = 0
    while prefix < min(len(a), len(b)) and _same(a[prefix], b[prefix]):
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and _same(
        a[-1 - suffix], b[-1 - suffix]
    ):
        suffix += 1
    middle_a, middle_b = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    inserted = middle_b[0] if len(middle_b) == 1 and not middle_a else None
    if isinstance(inserted, ast.If) and (
        _is_early_exit(inserted) or _size(inserted) <= max_nodes
    ):
        yield "boundary_check_deleted"  # `if i >= n: return ...` added before the code
    elif (
        len(middle_b) == 1
        and isinstance(middle_b[0], ast.If)
        and not middle_b[0].orelse
        and len(middle_b[0].body) == len(middle_a)
        and all(_same(x, y) for x, y in zip(middle_a, middle_b[0].body))
    ):
        yield "boundary_check_deleted"  # the statements wrapped in a guard
    elif (
        {len(middle_a), len(middle_b)} == {0, 1}
        and isinstance((middle_a or middle_b)[0], ast.Return)
        and _size((middle_a or middle_b)[0]) <= max_nodes
    ):
        yield "wrong_return"
    else:
        yield "rewrite"


def _edits(
    a: ast.AST,
    b: ast.AST,
    max_nodes: int,
    parent: ast.AST | None = None,
    field: str = "",
    in_bound: bool = False,
) -> Iterator[str]:
    """A label for every minimal difference between the trees `a` and `b` (`parent` and
    `field`: where `a` hangs; `in_bound`: inside a range or slice bound); a difference
    replacing more than `max_nodes` nodes in all is a rewrite, whatever its shape."""
    if type(a) is not type(b):
        yield _label_replacement(a, b, parent, field, in_bound, max_nodes)
        return
    if _same(a, b):
        return
    if isinstance(a, ast.Call) and _same(a.func, b.func) and len(a.args) == len(b.args):
        dumps_a, dumps_b = [ast.dump(x) for x in a.args], [ast.dump(x) for x in b.args]
        if (
            dumps_a != dumps_b
            and sorted(dumps_a) == sorted(dumps_b)
            and _same_keywords(a, b)
        ):
            yield "argument_swap"
            return
    for name, value_a in ast.iter_fields(a):
        value_b = getattr(b, name)
        if isinstance(value_a, list):
            if len(value_a) == len(value_b):
                for x, y in zip(value_a, value_b):
                    if isinstance(x, ast.AST):
                        yield from _edits(
                            x, y, max_nodes, a, name, in_bound or _is_bound(a, name)
                        )
                    elif x != y:  # e.g. the names of `global x, y`
                        yield "rewrite"
            elif name in _BLOCK_FIELDS:
                yield from _label_statement_lists(value_a, value_b, max_nodes)
            elif isinstance(a, ast.BoolOp) and len(value_b) == len(value_a) + 1:
                yield "boundary_check_deleted"  # `x and y` -> `x and y and guard`
            else:
                yield "rewrite"
        elif isinstance(value_a, ast.AST) or isinstance(value_b, ast.AST):
            if value_a is None or value_b is None:
                yield "wrong_return" if isinstance(a, ast.Return) else "rewrite"
            else:
                yield from _edits(
                    value_a, value_b, max_nodes, a, name, in_bound or _is_bound(a, name)
                )
        elif value_a != value_b:  # a primitive field: Name.id, Constant.value, ...
            yield _label_replacement(a, b, parent, field, in_bound, max_nodes)


def _same_keywords(a: ast.Call, b: ast.Call) -> bool:
    return [ast.dump(k) for k in a.keywords] == [ast.dump(k) for k in b.keywords]


def _header(statement: ast.AST) -> str:
    """The statement with its nested blocks emptied: `for i in x:` without its body."""
    shallow = copy.copy(statement)
    for block in _BLOCK_FIELDS:
        if hasattr(shallow, block):
            setattr(shallow, block, [])
    return ast.dump(shallow)


def _statements_in_order(tree: ast.AST) -> list[tuple[str, int]]:
    """(statement header, nesting depth) of every statement, in reading order."""
    out: list[tuple[str, int]] = []

    def visit(statements: list[ast.AST], depth: int) -> None:
        for statement in statements:
            out.append((_header(statement), depth))
            for block in _BLOCK_FIELDS:
                visit(getattr(statement, block, None) or [], depth + 1)

    visit(tree.body, 0)  # type: ignore[attr-defined]
    return out


def _indentation_pattern(buggy: ast.AST, candidate: ast.AST) -> str | None:
    """`indentation_removed` when the candidate re-indents statements into a block the
    bug had dedented them out of, `indentation_misplaced` for another move; None when
    the statements themselves changed."""
    a, b = _statements_in_order(buggy), _statements_in_order(candidate)
    if [s for s, _ in a] != [s for s, _ in b]:
        return None
    depth_changes = [db - da for (_, da), (_, db) in zip(a, b) if da != db]
    if not depth_changes:
        return None
    return (
        "indentation_removed"
        if all(d > 0 for d in depth_changes)
        else "indentation_misplaced"
    )


def classify_fix(buggy: str, candidate: str, config: SignalConfig | None = None) -> str:
    """The bug pattern the candidate's edit repairs: one of BUG_PATTERNS, or NO_CHANGE
    ("") when the programs are equal or the candidate does not parse."""
    config = config or SignalConfig()
    buggy_tree, candidate_tree = parse_or_none(buggy), parse_or_none(candidate)
    if candidate_tree is None:
        return NO_CHANGE
    if buggy_tree is None:
        return "missing_colon"
    buggy_tree, candidate_tree = strip_docstrings(buggy_tree), strip_docstrings(
        candidate_tree
    )
    if _same(buggy_tree, candidate_tree):
        return NO_CHANGE
    moved = _indentation_pattern(buggy_tree, candidate_tree)
    if moved is not None:
        return moved
    labels = list(_edits(buggy_tree, candidate_tree, config.max_changed_nodes))
    if len(set(labels)) == 1 and len(labels) <= config.max_pattern_edits:
        return labels[0]
    return "rewrite"
