import pytest

from streams.sandbox.asserts import parse_value, prepare_test
from streams.sandbox.errors import InvalidRequest


def test_literal_right_side_is_split_off():
    test = prepare_test('assert remove_Occ("hello","l") == "heo"')
    assert test.kind == "expr"
    assert test.source == "remove_Occ('hello', 'l')"
    assert test.expected == "heo"


def test_literal_left_side_is_split_off_too():
    test = prepare_test("assert (1, -2.5) == f(3)")
    assert (test.kind, test.source, test.expected) == ("expr", "f(3)", (1, -2.5))


def test_non_literal_expected_runs_whole():
    test = prepare_test("assert set(f((3, 4), (4, 5))) == set((4,))")
    assert test.kind == "assert"
    assert test.expected is None
    assert "set" in test.source and test.source.startswith("assert ")


def test_isclose_and_other_comparisons_run_whole():
    assert (
        prepare_test("assert math.isclose(area(2), 12.56, rel_tol=0.001)").kind
        == "assert"
    )
    assert prepare_test("assert f(1) != 2").kind == "assert"
    assert prepare_test("assert 1 < f(1) == 2").kind == "assert"


def test_assert_with_message_is_still_split():
    test = prepare_test("assert f(2) == [1, 2], 'bad'")
    assert (test.kind, test.expected) == ("expr", [1, 2])


def test_invalid_test_is_a_typed_error():
    with pytest.raises(InvalidRequest):
        prepare_test("assert f(1 == ")


def test_parse_value_accepts_literals_and_refuses_the_rest():
    assert parse_value("{'a': [1, (2, 3)]}") == (True, {"a": [1, (2, 3)]})
    assert parse_value("set()") == (True, set())
    assert parse_value("<object at 0x1>") == (False, None)
    assert parse_value("__import__('os')") == (False, None)
