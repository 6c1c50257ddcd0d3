import pytest

from streams.signals import BUG_PATTERNS, NO_CHANGE, classify_fix

SUM = "def f(xs, n):\n    total = 0\n    for i in range(n):\n        total += xs[i]\n    return total\n"
CHECK = "def f(a):\n    if a < 3:\n        return 1\n    return 0\n"


def fn(*lines: str) -> str:
    return "def f(xs, n):\n" + "".join(f"    {line}\n" for line in lines)


# (pattern, buggy code, candidate = the correct code)
CASES = [
    ("operator_swap", SUM.replace("total += xs[i]", "total -= xs[i]"), SUM),
    ("operator_swap", CHECK.replace("a < 3", "a > 3"), CHECK),
    ("variable_rename", SUM.replace("return total", "return n"), SUM),
    ("variable_rename", SUM.replace("xs[i]", "xs[n]"), SUM),
    ("off_by_one", SUM.replace("range(n)", "range(n - 1)"), SUM),
    ("off_by_one", SUM.replace("range(n)", "range(n + 1)"), SUM),
    (
        "off_by_one",
        SUM.replace("range(n)", "range(1, n)"),
        SUM.replace("range(n)", "range(0, n)"),
    ),
    (
        "off_by_one",
        "def f(xs):\n    return xs[1:]\n",
        "def f(xs):\n    return xs[2:]\n",
    ),
    # The corpus calls every operator change a swap, `<` -> `<=` and `==` -> `!=` too.
    ("operator_swap", CHECK.replace("a < 3", "a <= 3"), CHECK),
    ("operator_swap", CHECK.replace("a < 3", "a >= 3"), CHECK),
    # A number moved by one is off_by_one only as a range/slice bound.
    ("wrong_constant", CHECK.replace("a < 3", "a < 4"), CHECK),
    ("wrong_constant", CHECK.replace("a < 3", "a < 7"), CHECK),
    (
        "wrong_constant",
        "def f():\n    return 'x'.join([])\n",
        "def f():\n    return ''.join([])\n",
    ),
    ("negated_condition", CHECK.replace("a < 3", "not a < 3"), CHECK),
    (
        "argument_swap",
        "def f(a, b):\n    return pow(b, a)\n",
        "def f(a, b):\n    return pow(a, b)\n",
    ),
    ("wrong_return", SUM.replace("return total", "return xs[0]"), SUM),
    ("wrong_return", SUM.replace("return total", "return None"), SUM),
    ("wrong_return", CHECK.replace("return 1", "return not 1"), CHECK),
    (
        "wrong_return",
        fn("total = sum(xs[:n])"),
        fn("total = sum(xs[:n])", "return total"),
    ),
    (
        "boundary_check_deleted",
        "def f(xs):\n    return xs[0]\n",
        "def f(xs):\n    if not xs:\n        return None\n    return xs[0]\n",
    ),
    (
        "boundary_check_deleted",
        fn("for i in range(n):", "    print(xs[i])"),
        fn("for i in range(n):", "    if i < len(xs):", "        print(xs[i])"),
    ),
    (
        "boundary_check_deleted",
        fn("i = 0", "while xs[i] > 0:", "    i += 1", "return i"),
        fn("i = 0", "while i < n and xs[i] > 0:", "    i += 1", "return i"),
    ),
    (
        "indentation_removed",
        fn("for x in xs:", "    s = x", "s += 1", "return s"),
        fn("for x in xs:", "    s = x", "    s += 1", "return s"),
    ),
    (
        "indentation_misplaced",
        fn("for x in xs:", "    s = x", "    s += 1", "return s"),
        fn("for x in xs:", "    s = x", "s += 1", "return s"),
    ),
    ("missing_colon", "def f(xs)\n    return xs\n", "def f(xs):\n    return xs\n"),
    (
        "rewrite",
        "def f(a, b):\n    s = a * b\n    return s\n",
        "def g(q):\n    while q:\n        q -= 1\n    return [q]\n",
    ),
    (
        "rewrite",
        "def f(xs):\n    return xs\n",
        "def f(xs):\n    return sorted(set(xs), key=lambda v: (v % 3, -v))[::-1]\n",
    ),
    # two different kinds of edit at once
    ("rewrite", SUM.replace("range(n)", "range(n - 1)").replace("+=", "-="), SUM),
]


@pytest.mark.parametrize("pattern, buggy, candidate", CASES)
def test_classification(pattern, buggy, candidate):
    assert classify_fix(buggy, candidate) == pattern


def test_every_pattern_has_an_example():
    assert {case[0] for case in CASES} == set(BUG_PATTERNS)


def test_no_change_and_unparsable_candidate_give_no_pattern():
    assert classify_fix(SUM, SUM) == NO_CHANGE == ""
    assert (
        classify_fix(SUM, SUM.replace("def f(xs, n):", 'def f(xs, n):\n    """Sum."""'))
        == ""
    )
    assert classify_fix(SUM, "def f(xs, n)\n    return 0\n") == ""


def test_consistent_rename_in_several_places_is_one_pattern():
    buggy = SUM.replace("total", "totl")  # four occurrences
    assert classify_fix(buggy, SUM) == "variable_rename"


def test_a_long_early_exit_guard_is_still_a_boundary_check():
    buggy = "def f(s, t):\n    return False\n"
    fixed = "def f(s, t):\n    if any(t in x for x in s) and len(s) > 2 * len(t) + 1:\n        return True\n    return False\n"
    assert classify_fix(buggy, fixed) == "boundary_check_deleted"
    # the same size of new code that does not leave early is a rewrite
    other = "def f(s, t):\n    if any(t in x for x in s) and len(s) > 2 * len(t) + 1:\n        print(s)\n    return False\n"
    assert classify_fix(buggy, other) == "rewrite"
