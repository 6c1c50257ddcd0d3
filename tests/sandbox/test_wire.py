"""The plain-value codec on its own: what it builds, what it refuses."""

import math
from collections import Counter, OrderedDict, defaultdict, namedtuple
from enum import IntEnum

import pytest

from streams.sandbox.wire import TooDeep, WireError, decode, dumps, encode

Point = namedtuple("Point", "x y")


class Colour(IntEnum):
    RED = 3


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2 ** 70, 3 ** 30000, 1.5, -0.0, "", "tab\tand \ud800 surrogate", b"\x00\xff",
    1 - 2j, [], [1, [2, [3]]], (), (1, ("a",)), {}, {"a": 1, 2: [3], (1, 2): None, None: {"x"}},
    set(), {1, "a", (2, 3)}, frozenset({frozenset({1})}), [float("inf"), float("-inf")], [int, str, ValueError],
], ids=lambda v: type(v).__name__)
def test_plain_values_come_back_equal_and_of_the_same_exact_type(value):
    back = decode(dumps(value))
    assert back == value and type(back) is type(value)


def test_nan_comes_back_as_nan():
    assert math.isnan(decode(dumps(float("nan"))))


@pytest.mark.parametrize("value, plain", [
    (Counter("aab"), {"a": 2, "b": 1}), (OrderedDict(a=1), {"a": 1}), (defaultdict(list, a=[1]), {"a": [1]}),
    (Point(1, 2), (1, 2)), (Colour.RED, 3), (type("S", (str,), {"__eq__": lambda s, o: True})("no"), "no"),
])
def test_builtin_subclasses_become_their_base_value(value, plain):
    back = decode(dumps(value))
    assert back == plain and type(back) is type(plain)


def test_subclass_overrides_are_never_called():
    class Liar(list):
        def __iter__(self):
            raise AssertionError("called")

        def __eq__(self, other):
            raise AssertionError("called")

    assert decode(dumps(Liar([1, 2]))) == [1, 2]


def test_other_objects_need_a_handle_maker():
    obj = object()
    with pytest.raises(TypeError):
        encode([obj])
    assert encode([obj], handle_of=lambda o: {"h": 1, "type": "object"}) == [{"h": 1, "type": "object"}]
    assert decode('[{"h": 1, "type": "object"}]', handle=lambda n, t: (n, t)) == [(1, "object")]


def test_self_reference_is_too_deep():
    loop = []
    loop.append(loop)
    with pytest.raises(TooDeep):
        encode(loop)


@pytest.mark.parametrize("text", [
    "{", '{"x": 1}', '{"t": 1}', '{"s": [[1]]}', '{"d": [[1]]}', '{"c": [1, "a"]}', '{"b": "zz"}',
    '{"h": 1, "type": "A"}',  # a handle where none may be
    '{"i": "not hex"}', "[" * 100000 + "]" * 100000, '{"n": "exec"}', '{"n": "open"}', '{"n": "nothing"}',
], ids=lambda t: t[:12])
def test_anything_no_honest_writer_produces_is_refused(text):
    with pytest.raises(WireError):
        decode(text)
