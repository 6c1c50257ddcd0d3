"""The visible test and its error context: the rule, on hand-made failures and on known
mutants run through the real sandbox."""

import pytest

from producers.corpus.build import build_corpus
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.functions import SourceFunction
from producers.corpus.runner import TestFailure
from producers.corpus.visible import (MAX_ERROR_CHARS, TIMEOUT_MESSAGE, compile_failures, sorted_sets,
                                      split_tests, stable_message)

TESTS = ("assert f(1) == 2", "assert f(2) == 3", "assert f(5) == 6")


def wrong(index, message="expected 2, got 0"):
    return TestFailure(index, "wrong_answer", message)


def test_a_bug_failing_two_tests_shows_the_first_and_keeps_the_rest_hidden():
    split = split_tests(TESTS, [wrong(2, "expected 6, got 4"), wrong(1, "expected 3, got 1")])
    assert split.visible == ("assert f(2) == 3",)
    assert split.hidden == ("assert f(1) == 2", "assert f(5) == 6")
    assert split.error_context == "expected 3, got 1"
    assert not set(split.visible) & set(split.hidden)


def test_a_bug_failing_one_test_or_a_one_test_function_shows_nothing():
    # Showing the only failing test would leave hidden tests the bug passes.
    for tests, failures in [(TESTS, [wrong(0)]), (TESTS[:1], [wrong(0)]), (TESTS, [])]:
        split = split_tests(tests, failures)
        assert (split.hidden, split.visible, split.error_context) == (tuple(tests), (), "")


def test_messages_are_stable_and_cut_to_their_tail():
    assert stable_message(TestFailure(0, "timeout", "wall-clock timeout after 5.03 s")) == TIMEOUT_MESSAGE
    assert stable_message(TestFailure(0, "timeout", "wall-clock timeout after 7.91 s")) == TIMEOUT_MESSAGE
    at = stable_message(wrong(0, "ValueError: <map object at 0x7f3a2b1c> is bad"))
    assert at == "ValueError: <map object at 0x...> is bad"
    long = stable_message(wrong(0, "x" * 2000 + "KeyError: 'k'"))
    assert len(long) == MAX_ERROR_CHARS + 3 and long.endswith("KeyError: 'k'") and long.startswith("...")


def test_sets_in_expected_and_got_are_written_in_one_order_whatever_the_hash_seed():
    # {'x', 'y', 'z'} prints in an order that depends on the process's string hash seed
    for written in ("{'z', 'x', 'y'}", "{'y', 'x', 'z'}"):
        assert sorted_sets(f"expected {written}, got ('x', 'y')") == "expected {'x', 'y', 'z'}, got ('x', 'y')"
    nested = "expected [{3, 1}, {'b': {2, 1}}], got ({'b', 'a'},)"
    assert sorted_sets(nested) == "expected [{1, 3}, {'b': {1, 2}}], got ({'a', 'b'},)"
    assert sorted_sets("expected {2, 1}, got {1, 2, 3, 4...") == "expected {1, 2}, got {1, 2, 3, 4..."  # cut short
    assert sorted_sets("expected set(), got 'a, got b'") == "expected set(), got 'a, got b'"
    assert sorted_sets("TypeError: unhashable type: 'set'") == "TypeError: unhashable type: 'set'"
    assert stable_message(wrong(0, "expected {'b', 'a'}, got None")) == "expected {'a', 'b'}, got None"


def test_code_that_does_not_compile_fails_every_test_with_the_compiler_message():
    failures = compile_failures("def f(x)\n    return x\n", TESTS)
    assert [f.index for f in failures] == [0, 1, 2]
    assert failures[0].message == "SyntaxError: expected ':' (<candidate>, line 1)"
    with pytest.raises(ValueError):
        compile_failures("def f(x):\n    return x\n", TESTS)


INC = SourceFunction(function_id="custom-0101", source="mbpp", entry_point="inc",
                     reference_code="def inc(x):\n    return x + 1\n", tests=(
                         "assert inc(1) == 2", "assert inc(2) == 3", "assert inc(5) == 6"))
RATIO = SourceFunction(function_id="custom-0102", source="mbpp", entry_point="ratio",
                       reference_code="def ratio(a, b):\n    return a / (b + 1)\n",
                       tests=("assert ratio(2, 1) == 1.0", "assert ratio(6, 2) == 2.0"))
ONE_TEST = SourceFunction(function_id="custom-0103", source="mbpp", entry_point="inc",
                          reference_code="def inc(x):\n    return x + 1\n", tests=("assert inc(1) == 2",))


def test_known_mutants_keep_the_error_of_their_first_failing_test(runner):
    config = CorpusBuildConfig(patterns=("operator_swap", "missing_colon"))
    tasks, _ = build_corpus(config, runner, functions=[INC, RATIO, ONE_TEST], progress=False)
    by_id = {t["task_id"]: t for t in tasks}

    inc = by_id["custom-0101-operator_swap-0"]  # x - 1: every test fails, the first is shown
    assert inc["buggy_code"] == "def inc(x):\n    return x - 1\n"
    assert inc["visible_tests"] == ["assert inc(1) == 2"]
    assert inc["error_context"] == "expected 2, got 0"
    assert inc["tests"] == ["assert inc(2) == 3", "assert inc(5) == 6"]

    ratio = by_id["custom-0102-operator_swap-0"]  # a / (b - 1): ratio(2, 1) divides by zero
    assert ratio["visible_tests"] == ["assert ratio(2, 1) == 1.0"]
    assert ratio["error_context"] == "ZeroDivisionError: division by zero"
    assert ratio["tests"] == ["assert ratio(6, 2) == 2.0"]

    colon = by_id["custom-0101-missing_colon-0"]
    assert colon["error_context"] == "SyntaxError: expected ':' (<candidate>, line 1)"
    assert colon["visible_tests"] == ["assert inc(1) == 2"]

    for task in tasks:
        assert not set(task["visible_tests"]) & set(task["tests"])
        assert bool(task["visible_tests"]) == bool(task["error_context"])
    # A one-test function keeps its test hidden and has no error context.
    assert all(t["tests"] == ["assert inc(1) == 2"] and t["visible_tests"] == [] and t["error_context"] == ""
               for t in tasks if t["function_id"] == "custom-0103")

    hidden_only, _ = build_corpus(config.model_copy(update={"visible_failing_test": False}), runner,
                                  functions=[INC, RATIO], progress=False)
    assert all(t["visible_tests"] == [] and t["error_context"] == "" for t in hidden_only)
    assert [t["tests"] for t in hidden_only] == [list(f.tests) for f in (INC, INC, RATIO, RATIO)]
