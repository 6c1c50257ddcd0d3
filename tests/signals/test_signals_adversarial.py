import ast

from streams.signals import SignalConfig, random_inputs
from streams.signals.adversarial import infer_argument_types

MIN_COST = ["assert min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2) == 8"]


def parsed_args(call: str, entry_point: str) -> list:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and node.func.id == entry_point
    return [ast.literal_eval(a) for a in node.args]


def test_types_are_inferred_from_the_literal_arguments():
    types = infer_argument_types([([1, 2], "ab", 1), ([], "c", 2.5)])
    assert [t.kind for t in types] == ["list", "str", "float"]
    assert types[0].items[0].kind == "int"
    tuples = infer_argument_types([((1, 2),), ((1, 2, 3),)])
    assert [(t.kind, t.items[0].kind) for t in tuples] == [("vartuple", "int")]
    assert infer_argument_types([(1,), (1, 2)]) is None


def test_the_domain_keeps_the_ranges_lengths_and_alphabet_the_tests_show():
    (numbers, text, rows) = infer_argument_types(
        [([3, 9], "ab a", [[1, 2]]), ([5], "b", [[4, 0], [7, 7]])]
    )
    assert (numbers.low, numbers.high) == (1, 2)  # list lengths
    assert (numbers.items[0].low, numbers.items[0].high) == (3, 9)  # the ints inside
    assert (text.low, text.high, text.alphabet) == (1, 4, " ab")
    assert (rows.items[0].low, rows.items[0].high) == (2, 2)  # every row has two items
    # the empty list's items, never seen, do not narrow what the other lists show
    (lists,) = infer_argument_types([([],), ([4, 6],)])
    assert (lists.low, lists.high, lists.items[0].low, lists.items[0].high) == (0, 2, 4, 6)


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


def test_boundary_values_come_first_and_stay_in_the_widened_domain():
    config = SignalConfig(input_widening=0.5)
    tests = ["assert f([5, 6], 2) == 1", "assert f([1, 2, 3, 9], 6) == 1"]
    calls = random_inputs(tests, "f", 10, seed=0, config=config)
    # ints in the lists: 1..9 widened by 4 each side, but all positive stays >= 1: [1, 13];
    # list lengths 2..4 widened by 1: [1, 5]; k: 2..6 widened by 2, kept >= 1: [1, 8]
    # the two boundary calls: the shortest list of the lowest values with the lowest k, and
    # the longest list cycling through the int boundaries (1, 13) with the highest k
    assert calls[:2] == ["f([1], 1)", "f([1, 13, 1, 13, 1], 8)"]
    for call in calls:
        numbers, k = parsed_args(call, "f")
        assert 1 <= len(numbers) <= 5 and all(1 <= v <= 13 for v in numbers)
        assert 1 <= k <= 8


def test_the_tests_own_inputs_are_not_drawn_again():
    tests = ["assert g(3) == 9", "assert g(4) == 16"]
    calls = random_inputs(tests, "g", 20, seed=0, config=SignalConfig(input_widening=1.0))
    assert "g(3)" not in calls and "g(4)" not in calls
    assert set(calls) == {"g(2)", "g(5)"}  # [3, 4] widened by one each side; nothing else fits


def test_non_negative_and_non_empty_inputs_stay_so():
    tests = ["assert h('abc', [0, 4]) == 1", "assert h('zz', [2, 8, 9]) == 2"]
    for call in random_inputs(tests, "h", 30, seed=5):
        text, numbers = parsed_args(call, "h")
        assert text and set(text) <= set("abcz")
        assert numbers and all(v >= 0 for v in numbers)


def test_negative_ranges_stay_negative_and_floats_stay_floats():
    tests = ["assert m(-3.5, -1) == 0", "assert m(-0.5, -7) == 0"]
    for call in random_inputs(tests, "m", 20, seed=2):
        x, n = parsed_args(call, "m")
        assert isinstance(x, float) and x < 0
        assert type(n) is int and n <= -1


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
