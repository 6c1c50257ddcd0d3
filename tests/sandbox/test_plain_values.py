"""Values that lie, against the real sandbox: a comparison only ever sees plain data.

Assert-style tests with literal and non-literal expected values, and `check(candidate)`
suites, all run in the judge's process on what the candidate's calls returned, decoded
into exact builtin types. An object of the candidate's own fails with `non_plain_value`;
a correct candidate that returns a builtin subclass still passes.
"""

import pytest

from streams.sandbox import ErrorKind, EvalRequest

CHECK = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 4\n"
SUITES = {
    "literal": dict(tests=["assert f(1) == 2", "assert f(2) == 4"]),
    "non_literal": dict(tests=["assert f(1) == int('2')", "assert f(2) == max([4, 3])"]),
    "check": dict(tests=["check(f)"], setup_code=CHECK),
}

LIARS = {
    "eq_always_true": "class Yes:\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = object.__hash__\ndef f(x):\n    return Yes()\n",
    "built_by_type": "Yes = type('Yes', (), {'__eq__': lambda s, o: True, '__hash__': object.__hash__})\n"
    "def f(x):\n    return Yes()\n",
    "patched_by_setattr": "class Box:\n    pass\nsetattr(Box, '__eq__', lambda s, o: True)\n"
    "setattr(Box, '__hash__', object.__hash__)\ndef f(x):\n    return Box()\n",
    "metaclass": "class Meta(type):\n    def __call__(cls, *a):\n        obj = super().__call__()\n"
    "        return obj\nclass Yes(metaclass=Meta):\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = object.__hash__\ndef f(x):\n    return Yes()\n",
    "proxy_of_the_argument": "class Proxy:\n    def __init__(self, x):\n        self.x = x\n"
    "    def __getattr__(self, name):\n        return getattr(2 * self.x, name)\n"
    "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
    "def f(x):\n    return Proxy(x)\n",
    "numpy_like_scalar": "class Scalar:\n    def __init__(self, v):\n        self.v = v\n"
    "    def __index__(self):\n        return 2 * self.v\n    __int__ = __index__\n"
    "    def __float__(self):\n        return float(2 * self.v)\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = object.__hash__\ndef f(x):\n    return Scalar(x)\n",
    "claims_to_be_an_int": "class Fake:\n    __class__ = property(lambda self: int)\n"
    "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
    "def f(x):\n    return Fake()\n",
}

WRONG_SUBCLASSES = {
    # Builtin subclasses read through their base class: honest, wrong, values.
    "int_subclass": "class I(int):\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = int.__hash__\ndef f(x):\n    return I(0)\n",
    "str_subclass": "class S(str):\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = str.__hash__\ndef f(x):\n    return S('no')\n",
    "list_subclass": "class L(list):\n    def __eq__(self, other):\n        return True\n"
    "    def __iter__(self):\n        return iter([2, 4])\ndef f(x):\n    return L([0])\n",
}


def run(pool, code, suite):
    return pool.evaluate(EvalRequest(code=code, entry_point="f", **SUITES[suite]))


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("liar", sorted(LIARS))
def test_objects_that_lie_fail_with_non_plain_value(pool, liar, suite):
    result = run(pool, LIARS[liar], suite)
    assert result.tests_passed == 0, result
    assert result.error_kind is ErrorKind.WRONG_ANSWER, result
    assert "non_plain_value" in result.flags


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("liar", sorted(WRONG_SUBCLASSES))
def test_builtin_subclasses_that_lie_compare_as_their_base_value(pool, liar, suite):
    result = run(pool, WRONG_SUBCLASSES[liar], suite)
    assert result.tests_passed == 0, result
    assert result.error_kind is ErrorKind.WRONG_ANSWER


CORRECT = {
    "counter": ("from collections import Counter\ndef f(s):\n    return Counter(s)\n",
                ["assert f('aab') == {'a': 2, 'b': 1}", "assert f('aab') == Counter('aba')",
                 "assert f('aab')['a'] == 2"], ["from collections import Counter"]),
    "ordered_dict": ("from collections import OrderedDict\n"
                     "def f(n):\n    return OrderedDict((i, i * i) for i in range(n))\n",
                     ["assert f(3) == {0: 0, 1: 1, 2: 4}",
                      "assert list(f(3).items()) == [(0, 0), (1, 1), (2, 4)]"], []),
    "defaultdict": ("from collections import defaultdict\ndef f(words):\n    d = defaultdict(list)\n"
                    "    for w in words:\n        d[w[0]].append(w)\n    return d\n",
                    ["assert f(['ab', 'ac', 'b']) == {'a': ['ab', 'ac'], 'b': ['b']}"], []),
    "namedtuple": ("from collections import namedtuple\nP = namedtuple('P', 'x y')\n"
                   "def f(a):\n    return P(a, a + 1)\n",
                   ["assert f(1) == (1, 2)", "assert f(1)[1] == 2"], []),
    "generator": ("def f(n):\n    for i in range(n):\n        yield i * i\n",
                  ["assert list(f(4)) == [0, 1, 4, 9]", "assert sum(f(3)) == 5"], []),
    "nan_inf_huge": ("def f(n):\n    return [float('inf'), 2 ** n, -0.0, 1 + 2j, b'x', {1, 2}, frozenset()]\n",
                     ["assert f(20000)[1] == 2 ** 20000", "assert f(1)[0] == float('inf')",
                      "assert f(1)[2:] == [0.0, 1 + 2j, b'x', {2, 1}, frozenset()]"], []),
    "type_argument": ("def f(items, kind):\n    return [x for x in items if not isinstance(x, kind)]\n",
                      ["assert f((4, 5.5, 'a', 7), int) == [5.5, 'a']", "assert f([1, 'b'], str) == [1]",
                       "assert type(f([], int)) is list"], []),
    "raises_the_expected_error": ("def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
                                  ["try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    assert False"], []),
}


@pytest.mark.parametrize("case", sorted(CORRECT))
def test_correct_candidates_pass(pool, case):
    code, tests, imports = CORRECT[case]
    result = pool.evaluate(EvalRequest(code=code, tests=tests, entry_point="f", imports=imports))
    assert (result.tests_passed, result.error_kind, result.flags) == (len(tests), ErrorKind.NONE, []), result


def test_objects_of_the_candidate_pass_between_its_functions(pool):
    # MBPP 601: tests build instances of a class of the candidate's and pass them back.
    code = (
        "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "def max_chain_length(pairs, n):\n    pairs = sorted(pairs, key=lambda p: p.b)\n"
        "    count, end = 0, float('-inf')\n    for p in pairs:\n        if p.a > end:\n"
        "            count, end = count + 1, p.b\n    return count\n"
    )
    tests = ["assert max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)], 4) == 3",
             "assert Pair(1, 2).b == 2"]
    result = pool.evaluate(EvalRequest(code=code, tests=tests, entry_point="max_chain_length"))
    assert (result.tests_passed, result.error_kind) == (2, ErrorKind.NONE), result


def test_setup_code_builds_objects_of_the_candidate(pool):
    # MBPP 927: the setup code builds a tree from the candidate's own Node class.
    code = (
        "class Node:\n    def __init__(self, data):\n        self.data = data\n"
        "        self.left = self.right = None\n"
        "def max_height(node):\n    if node is None:\n        return 0\n"
        "    return 1 + max(max_height(node.left), max_height(node.right))\n"
    )
    setup = "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\n"
    result = pool.evaluate(EvalRequest(code=code, tests=["assert max_height(root) == 3"],
                                       entry_point="max_height", setup_code=setup))
    assert (result.tests_passed, result.error_kind) == (1, ErrorKind.NONE), result


def test_an_exit_inside_a_call_does_not_reach_the_judge(pool, healthy_after):
    code = "import sys\ndef f(x):\n    if x == 1:\n        sys.exit(0)\n    return 2 * x\n"
    result = run(pool, code, "literal")
    assert [o.passed for o in result.outcomes] == [False, True]
    assert "SystemExit" in result.outcomes[0].message


def test_a_function_argument_cannot_cross_and_says_so(pool):
    result = pool.evaluate(EvalRequest(code="def f(g):\n    return g(1)\n",
                                       tests=["assert f(lambda x: x + 1) == 2"], entry_point="f"))
    assert result.tests_passed == 0
    assert "cannot be passed to the candidate" in result.error_message


def test_a_module_full_of_tables_still_reaches_its_tests(pool):
    # 2,000 module-level lists of 1,000 ints: far more than one report may carry as values.
    code = "\n".join(f"v{i} = list(range(1000))" for i in range(2000)) + "\ndef f():\n    return len(v1999)\n"
    result = pool.evaluate(EvalRequest(code=code, tests=["assert f() == 1000", "assert v5[-1] == 999"],
                                       entry_point="f"))
    assert (result.tests_passed, result.error_kind, result.flags) == (2, ErrorKind.NONE, []), result


@pytest.mark.parametrize("body, message", [("return 'x' * 10 ** 7", "too long"),
                                           ("l = []\n    l.append(l)\n    return l", "not a plain value")])
def test_values_too_long_or_self_referencing_are_wrong_answers(pool, body, message):
    result = pool.evaluate(EvalRequest(code=f"def f():\n    {body}\n", tests=["assert f() == []"], entry_point="f"))
    assert result.tests_passed == 0 and result.error_kind is ErrorKind.WRONG_ANSWER
    assert message in result.error_message
