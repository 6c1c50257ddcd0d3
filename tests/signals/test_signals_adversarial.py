import ast

import pytest

from streams.signals import (
    SignalConfig,
    SignalInputError,
    random_inputs,
    rename_entry_point,
)
from streams.signals.adversarial import ValueType, infer_argument_types

MIN_COST = ["assert min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2) == 8"]


def parsed_args(call: str, entry_point: str) -> list:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and node.func.id == entry_point
    return [ast.literal_eval(a) for a in node.args]


def test_types_are_inferred_from_the_literal_arguments():
    types = infer_argument_types([([1, 2], "ab", 1), ([], "c", 2.5)])
    assert types == [
        ValueType("list", (ValueType("int"),)),
        ValueType("str"),
        ValueType("float"),
    ]
    tuples = infer_argument_types([((1, 2),), ((1, 2, 3),)])
    assert tuples == [ValueType("vartuple", (ValueType("int"),))]
    assert infer_argument_types([(1,), (1, 2)]) is None


def test_random_inputs_are_deterministic_for_a_seed():
    first = random_inputs(MIN_COST, "min_cost", 12, seed=7)
    assert first == random_inputs(MIN_COST, "min_cost", 12, seed=7)
    assert first != random_inputs(MIN_COST, "min_cost", 12, seed=8)


def test_random_inputs_have_the_visible_types_and_are_distinct():
    calls = random_inputs(MIN_COST, "min_cost", 15, seed=1)
    assert len(calls) == len(set(calls)) == 15
    for call in calls:
        matrix, m, n = parsed_args(call, "min_cost")
        assert isinstance(matrix, list) and all(isinstance(row, list) for row in matrix)
        assert all(isinstance(v, int) for row in matrix for v in row)
        assert type(m) is int and type(n) is int


def test_boundary_values_come_first():
    config = SignalConfig(large_int=1000, max_collection_size=3)
    calls = random_inputs(["assert f([5, 6], 3) == 1"], "f", 10, seed=0, config=config)
    # ints: 0, -1, 1, large; lists: empty, single, long (cycling the int boundaries)
    assert calls[:4] == ["f([], 0)", "f([0], -1)", "f([0, -1, 1], 1)", "f([], 1000)"]


def test_strings_dicts_and_bools_keep_their_types():
    calls = random_inputs(["assert g('ab', {'k': 1.5}, True) == 0"], "g", 8, seed=3)
    for call in calls:
        text, table, flag = parsed_args(call, "g")
        assert isinstance(text, str) and isinstance(flag, bool)
        assert all(
            isinstance(k, str) and isinstance(v, float) for k, v in table.items()
        )


def test_no_literal_call_gives_no_inputs():
    assert random_inputs(["assert f(x) == 1"], "f", 5) == []
    assert random_inputs(MIN_COST, "other_name", 5) == []


def test_rename_covers_definition_calls_and_recursion_but_not_attributes():
    code = "def fact(n):\r\n    return 1 if n < 2 else n * fact(n - 1)  # keep\r\n\r\nx = math.fact(fact=3)\r\n"
    tests = ["assert fact(3) == 6", "assert fact(fact(2)) == 2"]
    new_code, new_tests = rename_entry_point(code, tests, "fact", "candidate_fn")
    assert new_code == (
        "def candidate_fn(n):\r\n    return 1 if n < 2 else n * candidate_fn(n - 1)  # keep\r\n\r\n"
        "x = math.fact(fact=3)\r\n"
    )
    assert new_tests == [
        "assert candidate_fn(3) == 6",
        "assert candidate_fn(candidate_fn(2)) == 2",
    ]


def test_rename_round_trip_restores_the_source(mbpp_first_ten):
    for row in mbpp_first_ten:
        entry = (
            ast.parse(row["test_list"][0]).body[0].test.left.func.id
        )  # assert f(...) == ...
        renamed, tests = rename_entry_point(
            row["code"], row["test_list"], entry, "renamed_fn"
        )
        assert "renamed_fn" in renamed and all("renamed_fn(" in t for t in tests)
        assert rename_entry_point(renamed, tests, "renamed_fn", entry) == (
            row["code"],
            row["test_list"],
        )


def test_rename_rejects_a_bad_name():
    with pytest.raises(SignalInputError):
        rename_entry_point("def f():\n    pass\n", [], "f", "not a name")


def test_rename_accepts_ambiguous_tab_indentation():
    code = "def f(x):\r\n  if x:\r\n\t   return f(0)\r\n  return 1"
    renamed, _ = rename_entry_point(code, [], "f", "g")
    assert "def g(x):" in renamed and "return g(0)" in renamed
