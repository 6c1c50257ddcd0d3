"""Lines each test ran (EvalRequest.trace_lines), against the real sandbox."""

from streams.sandbox import EvalRequest

SIGN = (
    "def sign(x):\n"  # 1
    "    if x > 0:\n"  # 2
    "        return 1\n"  # 3
    "    return helper(x)\n"  # 4
    "\n"
    "def helper(x):\n"  # 6
    "    return -1 if x else 0\n"  # 7
    "\n"
    "def squares(xs):\n"  # 9
    "    return [x * x\n"  # 10
    "            for x in xs]\n"  # 11
)
TESTS = ["assert sign(3) == 1", "assert sign(-2) == -1", "assert squares([2]) == [4]", "assert 1 + 1 == 2"]


def lines_of(result):
    return [sorted(o.executed_lines) for o in result.outcomes]


def test_each_test_reports_the_lines_it_ran_in_the_candidates_functions(pool, healthy_after):
    result = pool.evaluate(EvalRequest(code=SIGN, tests=TESTS, entry_point="sign", trace_lines=True))
    assert result.tests_passed == 4
    # helper's line is run from sign's; the comprehension's lines belong to squares; the last
    # test never calls the candidate, so it has no lines.
    assert lines_of(result) == [[2, 3], [2, 4, 7], [10, 11], []]


def test_no_lines_unless_asked(pool):
    result = pool.evaluate(EvalRequest(code=SIGN, tests=TESTS, entry_point="sign"))
    assert result.tests_passed == 4
    assert lines_of(result) == [[], [], [], []]


def test_lines_run_while_loading_belong_to_no_test(pool):
    code = SIGN + "sign(-5)\nsign(5)\n"
    result = pool.evaluate(EvalRequest(code=code, tests=TESTS[:1], entry_point="sign", trace_lines=True))
    assert lines_of(result) == [[2, 3]]


def test_a_failing_test_still_reports_its_lines(pool):
    code = SIGN.replace("return 1\n", "return 2\n")
    result = pool.evaluate(EvalRequest(code=code, tests=TESTS[:2], entry_point="sign", trace_lines=True))
    assert [o.passed for o in result.outcomes] == [False, True]
    assert lines_of(result) == [[2, 3], [2, 4, 7]]  # the host keeps only passed tests' lines


def test_claimed_lines_are_cut_to_the_candidates_line_numbers(pool, healthy_after):
    # The tracer's record is a set in the candidate's own process: reachable, so forgeable.
    forger = (
        "import gc\n"
        "def sign(x):\n"
        "    for o in gc.get_objects():\n"
        "        if type(o) is set and o and all(type(n) is int for n in o):\n"
        "            o.update(range(-5, 1000))\n"
        "    return 1\n"
    )
    result = pool.evaluate(EvalRequest(code=forger, tests=TESTS[:1], entry_point="sign", trace_lines=True))
    assert result.tests_passed == 1
    assert lines_of(result) == [[1, 2, 3, 4, 5, 6]]  # the judge passes on only lines the code has


def test_a_long_test_is_traced_only_up_to_the_event_budget(pool):
    code = ("def count(n):\n    total = 0\n    for i in range(n):\n        if i % 3:\n"
            "            total += i\n    return total\n")
    n = 300_000  # three line events an iteration: far past the budget
    tests = [f"assert count({n}) == {sum(i for i in range(n) if i % 3)}", "assert count(3) == 3"]
    result = pool.evaluate(EvalRequest(code=code, tests=tests, entry_point="count", trace_lines=True))
    assert result.tests_passed == 2
    # the long test stopped being traced inside its loop: its return line is missing
    assert lines_of(result) == [[2, 3, 4, 5], [2, 3, 4, 5, 6]]
