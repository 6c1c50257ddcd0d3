"""Each mutator on hand-made functions: the right sites, in order, and exactly one change."""

import ast
import difflib
import textwrap

import pytest

from producers.corpus.mutators import (
    ALL_PATTERNS,
    METHOD_PATTERNS,
    MutationError,
    ParsedSource,
    UnknownPatternError,
    get_mutator,
)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def mutants(pattern: str, code: str) -> dict[str, str]:
    """Site description -> mutated code, in site order."""
    parsed = ParsedSource(code)
    return {site.description: site.apply(parsed) for site in get_mutator(pattern).sites(parsed)}


def changed_regions(before: str, after: str) -> list[tuple]:
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def test_registry_holds_the_method_patterns_and_the_extras():
    assert set(METHOD_PATTERNS) <= set(ALL_PATTERNS)
    assert set(ALL_PATTERNS) - set(METHOD_PATTERNS) == {
        "off_by_one", "wrong_constant", "negated_condition", "wrong_return", "missing_colon"}
    with pytest.raises(UnknownPatternError):
        get_mutator("no_such_pattern")


def test_unparseable_source_is_a_typed_error():
    with pytest.raises(MutationError):
        ParsedSource("def f(:\n")


def test_operator_swap_sites_and_one_exact_change():
    code = src("""
        LIMIT = 1 + 2
        def f(a, b):
            if a < b and b >= 0:
                return a + b
            a -= 1
            return a == b
    """)
    found = mutants("operator_swap", code)
    # Module-level `1 + 2` is no site; the `and` (parent) comes before its comparisons.
    assert list(found) == [
        "line 3: `and` -> `or`", "line 3: `<` -> `<=`", "line 3: `>=` -> `>`",
        "line 4: `+` -> `-`", "line 5: `-=` -> `+=`", "line 6: `==` -> `!=`",
    ]
    assert found["line 3: `<` -> `<=`"] == code.replace("a < b", "a <= b")
    assert found["line 3: `and` -> `or`"] == code.replace("a < b and", "a < b or")
    assert found["line 6: `==` -> `!=`"] == code.replace("a == b", "a != b")


def test_argument_swap_swaps_neighbours_keeps_spacing_and_skips_equal_or_keyword_args():
    code = src("""
        def f(s, a, b):
            x = s.replace(a,  b)
            y = max(a, a)
            return g(a, key=b) + h(a, b, s)
    """)
    found = mutants("argument_swap", code)
    assert list(found) == [
        "line 2: `a` <-> `b` in call to `s.replace`",
        "line 4: `a` <-> `b` in call to `h`",
        "line 4: `b` <-> `s` in call to `h`",
    ]
    assert found["line 2: `a` <-> `b` in call to `s.replace`"] == code.replace(
        "s.replace(a,  b)", "s.replace(b,  a)")
    assert found["line 4: `b` <-> `s` in call to `h`"] == code.replace("h(a, b, s)", "h(a, s, b)")


def test_variable_rename_uses_only_variables_bound_earlier_in_the_same_function():
    code = src("""
        def f(a, b):
            total = a
            return total + b
    """)
    found = mutants("variable_rename", code)
    # `a` on line 2 may become `b` (a parameter) but not `total` (bound on that very line).
    assert list(found) == [
        "line 2: `a` -> `b`",
        "line 3: `total` -> `a`", "line 3: `total` -> `b`",
        "line 3: `b` -> `a`", "line 3: `b` -> `total`",
    ]
    assert found["line 3: `b` -> `total`"] == code.replace("total + b", "total + total")
    assert found["line 2: `a` -> `b`"] == code.replace("total = a", "total = b")


def test_variable_rename_leaves_globals_builtins_and_attributes_alone():
    code = src("""
        import math
        def f(xs):
            n = len(xs)
            return math.sqrt(n) + xs.count(n)
    """)
    parsed = ParsedSource(code)
    found = [(s.description, s.apply(parsed)) for s in get_mutator("variable_rename").sites(parsed)]
    # `len`, `math` and the attribute names `sqrt`/`count` are never renamed.
    assert found == [
        ("line 4: `n` -> `xs`", code.replace("sqrt(n)", "sqrt(xs)")),
        ("line 4: `xs` -> `n`", code.replace("xs.count", "n.count")),
        ("line 4: `n` -> `xs`", code.replace("count(n)", "count(xs)")),
    ]


def test_indentation_removed_dedents_the_last_statement_of_a_block():
    code = src("""
        def f(xs):
            total = 0
            for x in xs:
                y = x * 2
                total += y
            if total:
                return total
            return -1
    """)
    found = mutants("indentation_removed", code)
    # The one-statement `if` body cannot lose its only statement.
    assert list(found) == ["line 5: `total += y` dedented out of `for x in xs:`"]
    expected = code.replace("        total += y\n", "    total += y\n")
    assert found["line 5: `total += y` dedented out of `for x in xs:`"] == expected
    assert ast.parse(expected)  # still parses


def test_indentation_misplaced_indents_the_next_statement_into_the_block():
    code = src("""
        def f(xs):
            total = 0
            for x in xs:
                total += x
            return total
    """)
    found = mutants("indentation_misplaced", code)
    assert list(found) == ["line 5: `return total` indented into `for x in xs:`"]
    assert found["line 5: `return total` indented into `for x in xs:`"] == code.replace(
        "    return total", "        return total")


def test_indentation_mutators_skip_blocks_with_else():
    code = src("""
        def f(x):
            if x:
                a = 1
                b = 2
            else:
                a = 3
            return a
    """)
    assert mutants("indentation_removed", code) == {}
    assert mutants("indentation_misplaced", code) == {}


def test_boundary_check_deleted_removes_early_exit_guards_only():
    code = src("""
        def f(xs, n):
            if n <= 0:
                return []
            out = []
            for x in xs:
                if x is None:
                    continue
                if x > n:
                    out.append(n)
                out.append(x)
            return out
    """)
    found = mutants("boundary_check_deleted", code)
    # `if x > n:` does not leave early, so it is no guard.
    assert list(found) == ["line 2: guard `if n <= 0:` deleted",
                           "line 6: guard `if x is None:` deleted"]
    assert found["line 2: guard `if n <= 0:` deleted"] == code.replace(
        "    if n <= 0:\n        return []\n", "")
    assert found["line 6: guard `if x is None:` deleted"] == code.replace(
        "        if x is None:\n            continue\n", "")


def test_boundary_check_deleted_never_empties_a_block():
    code = src("""
        def f(x):
            if x:
                if x > 1:
                    raise ValueError(x)
            return x
    """)
    assert list(mutants("boundary_check_deleted", code)) == []


def test_off_by_one_moves_range_and_slice_bounds():
    code = src("""
        def f(xs, n):
            for i in range(1, n + 1, 2):
                pass
            return xs[:-1]
    """)
    found = mutants("off_by_one", code)
    assert found == {
        "line 2: range bound `1` -> `2`": code.replace("range(1,", "range(2,"),
        "line 2: range bound `1` -> `0`": code.replace("range(1,", "range(0,"),
        "line 2: range bound `n + 1` -> `n + 2`": code.replace("n + 1", "n + 2"),
        "line 2: range bound `n + 1` -> `n`": code.replace("n + 1, 2", "n, 2"),
        "line 4: slice bound `-1` -> `0`": code.replace("xs[:-1]", "xs[:0]"),
        "line 4: slice bound `-1` -> `-2`": code.replace("xs[:-1]", "xs[:-2]"),
    }


def test_off_by_one_wraps_a_loose_bound_in_parentheses():
    code = "def f(n, k):\n    return list(range(n >> k))\n"
    found = mutants("off_by_one", code)
    assert found["line 2: range bound `n >> k` -> `(n >> k) + 1`"] == code.replace(
        "range(n >> k)", "range((n >> k) + 1)")


def test_wrong_constant_changes_literals_but_not_bounds():
    code = src("""
        def f(xs):
            found = False
            scale = 0.5
            return [x * 3 for x in xs[1:]], found, scale, 0
    """)
    found = mutants("wrong_constant", code)
    assert list(found) == [
        "line 2: `False` -> `True`",
        "line 3: constant `0.5` -> `1.0`", "line 3: constant `0.5` -> `0.25`",
        "line 4: constant `3` -> `4`", "line 4: constant `3` -> `2`",
        "line 4: constant `0` -> `1`",
    ]
    assert found["line 4: constant `3` -> `2`"] == code.replace("x * 3", "x * 2")
    assert found["line 4: constant `0` -> `1`"] == code.replace("scale, 0", "scale, 1")


def test_negated_condition_adds_or_removes_not_with_the_needed_parentheses():
    code = src("""
        def f(a, b):
            while(a and b):
                a = a - 1
            if not b:
                return 0
            return 1 if a > b else 2
    """)
    found = mutants("negated_condition", code)
    assert found == {
        "line 2: condition `(a and b)` negated": code.replace("while(a and b)", "while not (a and b)"),
        "line 4: condition `not b` negated": code.replace("if not b:", "if b:"),
        "line 6: condition `a > b` negated": code.replace("if a > b", "if not a > b"),
    }
    code = "def g(a, b):\n    return [x for x in a if x or b]\n"
    assert mutants("negated_condition", code) == {
        "line 2: condition `x or b` negated": code.replace("if x or b", "if not (x or b)")}


def test_wrong_return_offers_none_other_variables_and_negation():
    code = src("""
        def f(xs, n):
            best = max(xs)
            if n:
                return best > n
            return best
    """)
    found = mutants("wrong_return", code)
    assert found == {
        "line 4: return `best > n` -> `None`": code.replace("return best > n", "return None"),
        "line 4: return `best > n` -> `not best > n`": code.replace("return best > n", "return not best > n"),
        "line 4: return `best > n` -> `n`": code.replace("return best > n", "return n"),
        "line 4: return `best > n` -> `xs`": code.replace("return best > n", "return xs"),
        "line 5: return `best` -> `None`": code.replace("    return best\n", "    return None\n"),
        "line 5: return `best` -> `n`": code.replace("    return best\n", "    return n\n"),
        "line 5: return `best` -> `xs`": code.replace("    return best\n", "    return xs\n"),
    }


def test_wrong_return_adds_a_space_after_a_bare_return_keyword():
    code = "def f(x):\n    return(x)\n"
    assert mutants("wrong_return", code)["line 2: return `(x)` -> `None`"] == "def f(x):\n    return None\n"


def test_missing_colon_deletes_one_header_colon_and_breaks_the_syntax():
    code = src("""
        def f(d):
            for k in {1: 2}:
                if d[1:2]: return k
            else:
                pass
    """)
    found = mutants("missing_colon", code)
    assert found == {
        "line 1: colon of `def f(d):` deleted": code.replace("def f(d):", "def f(d)"),
        "line 2: colon of `for k in {1: 2}:` deleted": code.replace("{1: 2}:", "{1: 2}"),
        "line 3: colon of `if d[1:2]:` deleted": code.replace("d[1:2]:", "d[1:2]"),
        "line 4: colon of `else:` deleted": code.replace("else:", "else"),
    }
    for mutated in found.values():
        with pytest.raises(SyntaxError):
            compile(mutated, "<mutant>", "exec")


SAMPLE = src("""
    import math
    def sample(values, limit):
        result = []
        for i in range(len(values) - 1):
            v = values[i]
            if v is None:
                continue
            if v < limit and v != 0:
                result.append(math.floor(v) + i)
            result.append(min(v, limit))
        while len(result) > 10:
            result.pop()
        return result[1:] if result else None
""")


@pytest.mark.parametrize("pattern", ALL_PATTERNS)
def test_every_site_changes_one_contiguous_region_and_nothing_else(pattern):
    parsed = ParsedSource(SAMPLE)
    sites = get_mutator(pattern).sites(parsed)
    assert sites, f"{pattern} found no site in the sample"
    for site in sites:
        mutated = site.apply(parsed)
        assert mutated != SAMPLE
        assert len(changed_regions(SAMPLE, mutated)) == 1, site.description
        if get_mutator(pattern).keeps_valid_syntax:
            assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(SAMPLE))


@pytest.mark.parametrize("pattern", ALL_PATTERNS)
def test_sites_are_listed_in_the_same_order_every_time(pattern):
    first = [s.description for s in get_mutator(pattern).sites(ParsedSource(SAMPLE))]
    again = [s.description for s in get_mutator(pattern).sites(ParsedSource(SAMPLE))]
    assert first == again
