"""Code strings for adversarial checks; the sandbox runs them, nothing is executed here.

- `random_inputs`: fresh calls of the entry point with arguments of the types seen in the
  visible tests (boundary values first, then hypothesis draws), so that the sandbox can
  compare candidate and reference beyond the visible tests.
- `rename_entry_point`: the same program and tests with the function renamed, to catch
  solutions that key on the function's name.
"""

import string
import warnings
from dataclasses import dataclass
from typing import Any

import hypothesis
import hypothesis.strategies as st
import libcst as cst
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import HypothesisDeprecationWarning

from streams.signals.config import SignalConfig
from streams.signals.errors import SignalInputError
from streams.signals.syntax import parse_cst
from streams.signals.visible_tests import parse_visible_tests

_TEXT_ALPHABET = string.ascii_letters + string.digits + " "


# --- type inference from literal values -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueType:
    """The inferred type of an argument: kind plus the types inside it.

    kinds: int, float, bool, str, none, list, set, tuple (fixed length, one type per
    position), vartuple (tuples of varying length), dict (items = (key, value)).
    """

    kind: str
    items: tuple["ValueType", ...] = ()


_INT, _FLOAT = ValueType("int"), ValueType("float")


def type_of(value: Any) -> ValueType:
    """The type of one literal value; empty containers hold ints until told otherwise."""
    if value is None:
        return ValueType("none")
    for python_type, kind in (
        (bool, "bool"),
        (int, "int"),
        (float, "float"),
        (str, "str"),
    ):
        if isinstance(value, python_type):
            return ValueType(kind)
    if isinstance(value, (list, set, frozenset)):
        kind = "list" if isinstance(value, list) else "set"
        return ValueType(kind, (_unify_all([type_of(v) for v in value]),))
    if isinstance(value, tuple):
        return ValueType("tuple", tuple(type_of(v) for v in value))
    if isinstance(value, dict):
        keys = _unify_all([type_of(k) for k in value])
        values = _unify_all([type_of(v) for v in value.values()])
        return ValueType("dict", (keys, values))
    return ValueType("str")  # bytes, complex, ...: a string is the nearest plain input


def _unify_all(types: list[ValueType]) -> ValueType:
    if not types:
        return _INT
    result = types[0]
    for t in types[1:]:
        result = unify(result, t)
    return result


def unify(a: ValueType, b: ValueType) -> ValueType:
    """The one type covering both: int+float is float, tuples of different lengths are
    vartuples, anything else that disagrees falls back to the first."""
    if a == b:
        return a
    if {a.kind, b.kind} == {"int", "float"}:
        return _FLOAT
    if a.kind == b.kind and a.kind in ("list", "set", "vartuple", "dict"):
        return ValueType(a.kind, tuple(unify(x, y) for x, y in zip(a.items, b.items)))
    if a.kind == b.kind == "tuple":
        if len(a.items) == len(b.items):
            return ValueType(
                "tuple", tuple(unify(x, y) for x, y in zip(a.items, b.items))
            )
        return ValueType("vartuple", (_unify_all([*a.items, *b.items]),))
    if {a.kind, b.kind} <= {"tuple", "vartuple"}:
        return ValueType("vartuple", (_unify_all([*a.items, *b.items]),))
    return a


def infer_argument_types(calls_args: list[tuple[Any, ...]]) -> list[ValueType] | None:
    """One type per argument position, or None when the calls disagree on the arity."""
    arities = {len(args) for args in calls_args}
    if len(arities) != 1:
        return None
    return [
        _unify_all([type_of(args[i]) for args in calls_args])
        for i in range(arities.pop())
    ]


# --- values: boundaries and strategies --------------------------------------------------


def boundary_values(t: ValueType, config: SignalConfig) -> list[Any]:
    """The edge cases of a type: zero, -1, empty, a single element, large."""
    size = config.max_collection_size
    if t.kind == "int":
        return [0, -1, 1, config.large_int]
    if t.kind == "float":
        return [0.0, -1.0, 0.5, float(config.large_int)]
    if t.kind == "bool":
        return [False, True]
    if t.kind == "str":
        return ["", "a", "ab" * (size // 2) or "a"]
    if t.kind == "none":
        return [None]
    if t.kind in ("list", "vartuple", "set"):
        inner = boundary_values(t.items[0], config)
        make = {"list": list, "vartuple": tuple, "set": set}[t.kind]
        long = [inner[i % len(inner)] for i in range(size)]
        return [make(), make(inner[:1]), make(long)]
    if t.kind == "tuple":
        per_item = [boundary_values(item, config) for item in t.items]
        count = max((len(v) for v in per_item), default=1)
        return [tuple(v[k % len(v)] for v in per_item) for k in range(count)]
    if t.kind == "dict":
        keys, values = (boundary_values(x, config) for x in t.items)
        return [{}, {keys[0]: values[0]}]
    raise ValueError(f"unknown kind {t.kind}")


def strategy_for(t: ValueType, config: SignalConfig) -> st.SearchStrategy:
    size, large = config.max_collection_size, config.large_int
    if t.kind == "int":
        return st.integers(-large, large)
    if t.kind == "float":
        return st.floats(-large, large, allow_nan=False, allow_infinity=False)
    if t.kind == "bool":
        return st.booleans()
    if t.kind == "str":
        return st.text(alphabet=_TEXT_ALPHABET, max_size=size)
    if t.kind == "none":
        return st.none()
    if t.kind == "list":
        return st.lists(strategy_for(t.items[0], config), max_size=size)
    if t.kind == "vartuple":
        return st.lists(strategy_for(t.items[0], config), max_size=size).map(tuple)
    if t.kind == "set":
        return st.sets(strategy_for(t.items[0], config), max_size=size)
    if t.kind == "tuple":
        return st.tuples(*(strategy_for(item, config) for item in t.items))
    if t.kind == "dict":
        keys, values = (strategy_for(x, config) for x in t.items)
        return st.dictionaries(keys, values, max_size=size)
    raise ValueError(f"unknown kind {t.kind}")


def ignore_other_threads_random() -> None:
    """Silence Hypothesis' "Do not use the `random` module inside strategies" for our draws.

    The draws run on the worker's signal thread while the event loop's thread uses the
    global `random` module (the Kafka client shuffles partitions on every fetch). Hypothesis
    compares the global state before and after each draw and takes the other thread's use
    for the strategy's own (its `_note_random_in_strategy` names such thread races). These
    strategies never touch `random`; the draws come from Hypothesis' own seeded generator and
    repeat for a seed whatever other threads do (tests/signals/test_adversarial_threads.py).
    """
    warnings.filterwarnings(
        "ignore", message="Do not use the `random` module inside strategies", category=HypothesisDeprecationWarning
    )


ignore_other_threads_random()


def _draw(strategy: st.SearchStrategy, count: int, seed: int) -> list[Any]:
    """`count` examples of the strategy, the same ones for the same seed.

    `strategy.example()` is not reproducible; a @given run with a fixed @seed, no
    example database and only the generate phase is.
    """
    drawn: list[Any] = []

    @hypothesis.seed(seed)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        drawn.append(data.draw(strategy))

    collect()
    return drawn


def _call(entry_point: str, args: tuple[Any, ...]) -> str:
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def random_inputs(
    visible_tests: list[str],
    entry_point: str,
    n: int,
    seed: int = 0,
    config: SignalConfig | None = None,
) -> list[str]:
    """Up to n distinct call expressions of `entry_point` (e.g. `f(0, [])`) with
    arguments of the visible tests' types: boundary values first, then random draws.
    Empty when the visible tests have no literal call to learn the types from."""
    config = config or SignalConfig()
    calls = parse_visible_tests(visible_tests, entry_point)
    types = infer_argument_types([c.args for c in calls]) if calls else None
    if types is None or n <= 0:
        return []
    per_position = [boundary_values(t, config) for t in types]
    boundary_count = max((len(v) for v in per_position), default=1)
    candidates = [
        tuple(v[k % len(v)] for v in per_position) for k in range(boundary_count)
    ]
    # Draw more than needed: small types repeat themselves and duplicates are dropped.
    candidates += _draw(
        st.tuples(*(strategy_for(t, config) for t in types)), 3 * n, seed
    )
    out: list[str] = []
    for args in candidates:
        call = _call(entry_point, args)
        if call not in out:
            out.append(call)
        if len(out) == n:
            break
    return out


# --- harmless rename ----------------------------------------------------------------------


class _Renamer(cst.CSTTransformer):
    """Renames every name `old` to `new`, but not attributes (`x.old`) or keyword
    arguments (`g(old=1)`), which belong to other objects."""

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


def _rename_in(code: str, old: str, new: str) -> str:
    tree = parse_cst(code)
    if tree is None:
        raise SignalInputError(f"cannot parse for renaming: {code[:80]!r}")
    return tree.visit(_Renamer(old, new)).code


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
