"""Random calls of the entry point for the differential check; the sandbox runs them.

`random_inputs`: fresh calls of the entry point with arguments from the domain the tests
show (types, number ranges, string alphabets and lengths, collection sizes, each widened
a little), boundary values first, then hypothesis draws, so that the sandbox can compare
candidate and reference beyond the tests. Staying inside the tests' domain keeps the
inputs valid for the function: an input the function was never meant to take (a negative
count, an empty list where every test has items) would make honest code disagree with the
reference for no fault of its own.

The renames live in `streams.signals.renaming`.
"""

import math
import string
import warnings
from dataclasses import dataclass
from typing import Any

import hypothesis
import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import HypothesisDeprecationWarning

from streams.signals.config import SignalConfig
from streams.signals.visible_tests import parse_visible_tests

_TEXT_ALPHABET = string.ascii_letters + string.digits + " "
_SIZED = ("str", "list", "set", "vartuple", "dict")


# --- the tests' domain, from literal values ---------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueType:
    """The inferred domain of an argument: kind, the types inside it, and the range seen.

    kinds: int, float, bool, str, none, list, set, tuple (fixed length, one type per
    position), vartuple (tuples of varying length), dict (items = (key, value)).
    low/high: the smallest and largest value seen (int, float) or length seen (str and
    collections); None when nothing was seen (the items of an empty list).
    alphabet: the characters seen in strings, sorted.
    """

    kind: str
    items: tuple["ValueType", ...] = ()
    low: float | None = None
    high: float | None = None
    alphabet: str = ""


_INT, _FLOAT = ValueType("int"), ValueType("float")


def type_of(value: Any) -> ValueType:
    """The domain of one literal value; empty containers hold ints until told otherwise."""
    if value is None:
        return ValueType("none")
    if isinstance(value, bool):
        return ValueType("bool")
    if isinstance(value, (int, float)):
        kind = "int" if isinstance(value, int) else "float"
        if isinstance(value, float) and not math.isfinite(value):
            return ValueType(kind)
        return ValueType(kind, low=value, high=value)
    if isinstance(value, str):
        return ValueType("str", low=len(value), high=len(value), alphabet="".join(sorted(set(value))))
    if isinstance(value, (list, set, frozenset)):
        kind = "list" if isinstance(value, list) else "set"
        return ValueType(kind, (_unify_all([type_of(v) for v in value]),), len(value), len(value))
    if isinstance(value, tuple):
        return ValueType("tuple", tuple(type_of(v) for v in value), len(value), len(value))
    if isinstance(value, dict):
        keys = _unify_all([type_of(k) for k in value])
        values = _unify_all([type_of(v) for v in value.values()])
        return ValueType("dict", (keys, values), len(value), len(value))
    return ValueType("str")  # bytes, complex, ...: a string is the nearest plain input


def _unify_all(types: list[ValueType]) -> ValueType:
    if not types:
        return _INT
    result = types[0]
    for t in types[1:]:
        result = unify(result, t)
    return result


def _span(a: ValueType, b: ValueType) -> dict:
    """The range covering both (a side that saw nothing does not narrow it)."""
    lows = [x for x in (a.low, b.low) if x is not None]
    highs = [x for x in (a.high, b.high) if x is not None]
    return {"low": min(lows) if lows else None, "high": max(highs) if highs else None,
            "alphabet": "".join(sorted(set(a.alphabet) | set(b.alphabet)))}


def unify(a: ValueType, b: ValueType) -> ValueType:
    """The one domain covering both: int+float is float, tuples of different lengths are
    vartuples, ranges and alphabets join; anything else that disagrees falls back to the first."""
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("int", "float", "str", "bool", "none"):
        return ValueType(a.kind, **_span(a, b))
    if {a.kind, b.kind} == {"int", "float"}:
        return ValueType("float", **_span(a, b))
    if a.kind == b.kind and a.kind in ("list", "set", "vartuple", "dict"):
        return ValueType(a.kind, tuple(unify(x, y) for x, y in zip(a.items, b.items)), **_span(a, b))
    if a.kind == b.kind == "tuple":
        if len(a.items) == len(b.items):
            return ValueType("tuple", tuple(unify(x, y) for x, y in zip(a.items, b.items)), **_span(a, b))
        return ValueType("vartuple", (_unify_all([*a.items, *b.items]),), **_span(a, b))
    if {a.kind, b.kind} <= {"tuple", "vartuple"}:
        return ValueType("vartuple", (_unify_all([*a.items, *b.items]),), **_span(a, b))
    return a


def infer_argument_types(calls_args: list[tuple[Any, ...]]) -> list[ValueType] | None:
    """One domain per argument position, or None when the calls disagree on the arity."""
    arities = {len(args) for args in calls_args}
    if len(arities) != 1:
        return None
    return [
        _unify_all([type_of(args[i]) for args in calls_args])
        for i in range(arities.pop())
    ]


# --- the domain drawn from: the tests' range, widened -----------------------------------


def _widened(low: float, high: float, widen: float, integral: bool) -> tuple[float, float]:
    """[low, high] grown by `widen` times its span on each side, never across the sign
    the tests keep (all positive stays >= 1 for ints, > 0 for floats; all >= 0 stays >= 0)."""
    grow = (high - low) * widen
    if integral:
        grow = int(grow)
    new_low, new_high = low - grow, high + grow
    if low > 0:
        new_low = max(new_low, 1 if integral else low / 2)
    elif low == 0:
        new_low = max(new_low, 0)
    if high < 0:
        new_high = min(new_high, -1 if integral else high / 2)
    elif high == 0:
        new_high = min(new_high, 0)
    return new_low, new_high


def number_range(t: ValueType, config: SignalConfig) -> tuple[float, float]:
    """The range numbers of this domain are drawn from."""
    large = config.large_int
    if t.low is None or t.high is None:
        return -large, large
    low, high = _widened(t.low, t.high, config.input_widening, t.kind == "int")
    low, high = max(low, -large), min(high, large)
    return (int(low), int(high)) if t.kind == "int" else (float(low), float(high))


def size_range(t: ValueType, config: SignalConfig) -> tuple[int, int]:
    """The lengths drawn for a string or collection: the tests' lengths, widened, never
    emptier than every test (non-empty stays non-empty)."""
    if t.low is None or t.high is None:
        return 0, config.max_collection_size
    low, high = _widened(int(t.low), int(t.high), config.input_widening, True)
    return int(low), int(min(high, max(config.max_collection_size, t.high)))


def alphabet_of(t: ValueType) -> str:
    return t.alphabet or _TEXT_ALPHABET


# --- values: boundaries and strategies --------------------------------------------------


def boundary_values(t: ValueType, config: SignalConfig) -> list[Any]:
    """The edge cases of a domain: its ends, and zero, -1 and 1 where they lie inside;
    the shortest, a single-item and the longest collection."""
    if t.kind in ("int", "float"):
        low, high = number_range(t, config)
        inside = [v for v in (0, -1, 1) if low <= v <= high]
        values = [low, high, *(v if t.kind == "int" else float(v) for v in inside)]
        return list(dict.fromkeys(values))
    if t.kind == "bool":
        return [False, True]
    if t.kind == "none":
        return [None]
    low, high = size_range(t, config) if t.kind in _SIZED else (0, 0)
    sizes = list(dict.fromkeys([low, max(low, min(1, high)), high]))
    if t.kind == "str":
        alphabet = alphabet_of(t)
        return ["".join(alphabet[i % len(alphabet)] for i in range(n)) for n in sizes]
    if t.kind in ("list", "vartuple", "set"):
        inner = boundary_values(t.items[0], config)
        make = {"list": list, "vartuple": tuple, "set": set}[t.kind]
        return [make(inner[i % len(inner)] for i in range(n)) for n in sizes]
    if t.kind == "tuple":
        per_item = [boundary_values(item, config) for item in t.items]
        count = max((len(v) for v in per_item), default=1)
        return [tuple(v[k % len(v)] for v in per_item) for k in range(count)]
    if t.kind == "dict":
        keys, values = (boundary_values(x, config) for x in t.items)
        return [{keys[i % len(keys)]: values[i % len(values)] for i in range(n)} for n in sizes]
    raise ValueError(f"unknown kind {t.kind}")


def strategy_for(t: ValueType, config: SignalConfig) -> st.SearchStrategy:
    if t.kind == "int":
        low, high = number_range(t, config)
        return st.integers(low, high)
    if t.kind == "float":
        low, high = number_range(t, config)
        return st.floats(low, high, allow_nan=False, allow_infinity=False)
    if t.kind == "bool":
        return st.booleans()
    if t.kind == "none":
        return st.none()
    low, high = size_range(t, config) if t.kind in _SIZED else (0, 0)
    if t.kind == "str":
        return st.text(alphabet=alphabet_of(t), min_size=low, max_size=high)
    if t.kind == "list":
        return st.lists(strategy_for(t.items[0], config), min_size=low, max_size=high)
    if t.kind == "vartuple":
        return st.lists(strategy_for(t.items[0], config), min_size=low, max_size=high).map(tuple)
    # Distinct items may be fewer than asked for (a set of bools): ask for at most one.
    if t.kind == "set":
        return st.sets(strategy_for(t.items[0], config), min_size=min(low, 1), max_size=high)
    if t.kind == "tuple":
        return st.tuples(*(strategy_for(item, config) for item in t.items))
    if t.kind == "dict":
        keys, values = (strategy_for(x, config) for x in t.items)
        return st.dictionaries(keys, values, min_size=min(low, 1), max_size=high)
    raise ValueError(f"unknown kind {t.kind}")


def ignore_other_threads_random() -> None:
    """Silence Hypothesis' "Do not use the `random` module inside strategies" for our draws.

    The draws run on the worker's AST thread (streams/feedback/ast_thread.py) while the event
    loop's thread uses the global `random` module (the Kafka client shuffles partitions on every fetch). Hypothesis
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
    tests: list[str],
    entry_point: str,
    n: int,
    seed: int = 0,
    config: SignalConfig | None = None,
) -> list[str]:
    """Up to n distinct call expressions of `entry_point` (e.g. `f(0, [])`) with
    arguments from the tests' domain: boundary values first, then random draws.
    Empty when the tests have no literal call to learn the domain from."""
    config = config or SignalConfig()
    calls = parse_visible_tests(tests, entry_point)
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
    # The tests' own inputs teach nothing new: a candidate keyed on them passes them.
    out: list[str] = []
    seen = {_call(entry_point, c.args) for c in calls}
    for args in candidates:
        call = _call(entry_point, args)
        if call not in out and call not in seen:
            out.append(call)
        if len(out) == n:
            break
    return out
