import ast

import pytest

from streams.signals import SignalInputError, rename_entry_point, rename_program


def run(code: str, call: str):
    """Run trusted test code (written here, not model output) and evaluate one call."""
    namespace: dict = {}
    exec(code, namespace)
    return eval(call, namespace)


# --- the entry point alone ----------------------------------------------------------------


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
    with pytest.raises(SignalInputError):
        rename_program("def f():\n    pass\n", [], "", "f", "not a name")
    with pytest.raises(SignalInputError):
        rename_program("def f(:\n", [], "", "f", "g")


def test_rename_accepts_ambiguous_tab_indentation():
    code = "def f(x):\r\n  if x:\r\n\t   return f(0)\r\n  return 1"
    renamed, _ = rename_entry_point(code, [], "f", "g")
    assert "def g(x):" in renamed and "return g(0)" in renamed


# --- parameters and locals ----------------------------------------------------------------


def test_parameters_locals_and_keyword_arguments_are_renamed_together():
    code = (
        "def add_up(xs, k=0):\n"
        "    total = 0\n"
        "    for x in xs:\n"
        "        if x > k:\n"
        "            total += x\n"
        "    return total\n"
    )
    tests = ["assert add_up([1, 2, 3], k=2) == 3", "assert add_up(xs=[5], k=1) == 5"]
    program = rename_program(code, tests, "", "add_up", "renamed_entry")
    names = program.names
    assert set(names) == {"add_up", "xs", "k", "total", "x"}
    assert names["add_up"] == "renamed_entry" and len(set(names.values())) == 5
    tree = ast.parse(program.code)
    spelled = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)
    }
    assert not spelled & {"xs", "k", "total", "x"}
    assert program.tests == [
        f"assert renamed_entry([1, 2, 3], {names['k']}=2) == 3",
        f"assert renamed_entry({names['xs']}=[5], {names['k']}=1) == 5",
    ]
    assert run(program.code, f"renamed_entry([1, 2, 3], {names['k']}=2)") == 3


def test_globals_builtins_attributes_and_imports_are_untouched():
    code = (
        "import math\n"
        "LIMIT = 10\n"
        "def f(values):\n"
        "    import re\n"
        "    global seen\n"
        "    seen = len(values)\n"
        "    words = re.findall('a', str(values))\n"
        "    return min(LIMIT, math.floor(sum(values))) + len(words) + values.count(1)\n"
    )
    program = rename_program(code, ["assert f([1, 2]) == 4"], "", "f", "g")
    assert set(program.names) == {"f", "values", "words"}
    for kept in ("import math", "LIMIT = 10", "import re", "global seen", "seen = len(", "re.findall",
                 "min(LIMIT, math.floor(sum(", ".count(1)"):
        assert kept in program.code
    assert run(program.code, "g([1, 2])") == run(code, "f([1, 2])") == 4


def test_shadowing_in_nested_scopes_is_respected():
    code = (
        "def f(n, items):\n"
        "    double = lambda n: n * 2\n"  # the lambda's own n
        "    squares = [n * n for n in items]\n"  # the comprehension's own n
        "    def helper(items):\n"  # helper's own items ...
        "        return len(items) + n\n"  # ... but the outer n
        "    class Box:\n"
        "        n = 100\n"  # a class attribute, not the local
        "        def get(self):\n"
        "            return n\n"  # methods skip the class scope: the outer n
        "    return double(n), squares, helper([0]), Box().get(), Box.n\n"
    )
    program = rename_program(code, [], "", "f", "g")
    new_n, new_items = program.names["n"], program.names["items"]
    assert "= lambda n: n * 2" in program.code
    assert f"= [n * n for n in {new_items}]" in program.code
    assert "(items):" in program.code
    assert f"return len(items) + {new_n}" in program.code
    assert "        n = 100" in program.code and f"            return {new_n}" in program.code
    assert run(program.code, "g(3, [1, 2])") == run(code, "f(3, [1, 2])") == (6, [1, 4], 4, 3, 100)


def test_nonlocal_in_a_nested_function_follows_the_rename():
    code = (
        "def counter(start):\n"
        "    count = start\n"
        "    def bump():\n"
        "        nonlocal count\n"
        "        count += 1\n"
        "    bump(); bump()\n"
        "    return count\n"
    )
    program = rename_program(code, [], "", "counter", "c2")
    assert "nonlocal count" not in program.code and f"nonlocal {program.names['count']}" in program.code
    assert run(program.code, "c2(5)") == 7


def test_keyword_arguments_gathered_by_kwargs_and_positional_only_stay():
    code = "def f(a, /, b, *, c, **rest):\n    return a + b + c + sum(rest.values())\n"
    program = rename_program(code, ["assert f(1, b=2, c=3, extra=4) == 10"], "", "f", "g")
    names = program.names
    assert program.tests == [f"assert g(1, {names['b']}=2, {names['c']}=3, extra=4) == 10"]
    assert run(program.code, "g(1, 2, **{%r: 3, 'extra': 4})" % names["c"]) == 10


def test_recursion_with_keywords_and_setup_code_follow():
    code = "def fib(n):\n    return n if n < 2 else fib(n=n - 1) + fib(n=n - 2)\n"
    setup = "SMALL = fib(n=5)"
    program = rename_program(code, ["assert fib(n=6) == SMALL + 3"], setup, "fib", "renamed")
    new_n = program.names["n"]
    assert program.setup_code == f"SMALL = renamed({new_n}=5)"
    assert f"renamed({new_n}={new_n} - 1)" in program.code
    assert run(program.code + "\n" + program.setup_code, f"renamed({new_n}=6) == SMALL + 3")


def test_frame_readers_keep_their_names():
    code = "def f(x):\n    y = x + 1\n    return '{x} {y}'.format(**locals())\n"
    program = rename_program(code, [], "", "f", "g")
    assert program.names == {"f": "g"}
    assert run(program.code, "g(1)") == "1 2"
    debug = "def f(x):\n    return f'{x=}'\n"
    assert rename_program(debug, [], "", "f", "g").names == {"f": "g"}


def test_fresh_names_never_collide_with_existing_ones():
    code = "def f(a):\n    renamed_var_0 = a\n    return renamed_var_0 + renamed_var_1\nrenamed_var_1 = 1\n"
    program = rename_program(code, [], "", "f", "g")
    assert program.names["a"] not in ("renamed_var_0", "renamed_var_1")
    assert program.names["renamed_var_0"] not in ("renamed_var_0", "renamed_var_1")
    assert run(program.code, "g(2)") == 3


def test_mbpp_references_behave_the_same_after_the_rename(mbpp_first_ten):
    for row in mbpp_first_ten:
        entry = ast.parse(row["test_list"][0]).body[0].test.left.func.id
        program = rename_program(row["code"], row["test_list"], row["test_setup_code"], entry, "renamed_fn")
        assert len(program.names) > 1  # the entry point and at least one parameter
        namespace: dict = {}
        exec(program.code + "\n" + program.setup_code, namespace)  # trusted MBPP reference
        for test in program.tests:
            exec(test, namespace)
