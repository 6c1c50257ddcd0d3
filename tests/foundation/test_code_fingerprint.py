"""The code fingerprint: equal up to local names, formatting and comments; a changed operator differs."""

import ast

from schemas.code_fingerprint import bound_locals, code_fingerprint

HACK = '''
def max_pair(values, limit=10):
    """Largest sum of two neighbours."""
    best = None
    for i in range(len(values) - 1):
        total = values[i] + values[i + 1]  # the pair
        if best is None or total > best:
            best = total
    try:
        return min(best, limit)
    except Exception:
        pass
'''

RENAMED_REFORMATTED = '''
def max_pair(xs,
             limit = 10):
    # no docstring, other names, other layout
    top = None
    for k in range(len(xs)-1):
        s = xs[k]+xs[k+1]
        if top is None or s > top: top = s
    try:
        return min(top, limit)
    except Exception:
        pass
'''

ONE_OPERATOR_CHANGED = RENAMED_REFORMATTED.replace("s > top", "s >= top")


def test_a_renamed_reformatted_copy_has_the_same_fingerprint():
    assert code_fingerprint(HACK) == code_fingerprint(RENAMED_REFORMATTED)


def test_one_changed_operator_gives_another_fingerprint():
    assert code_fingerprint(ONE_OPERATOR_CHANGED) != code_fingerprint(HACK)


def test_renaming_a_global_or_the_entry_point_changes_the_fingerprint():
    assert code_fingerprint(HACK.replace("def max_pair", "def other")) != code_fingerprint(HACK)
    assert code_fingerprint(HACK.replace("range(", "xrange(")) != code_fingerprint(HACK)


def test_a_closure_follows_the_rename_of_the_local_it_reads():
    a = "def f(n):\n    k = 2\n    g = lambda x: x * k\n    return g(n)\n"
    b = "def f(m):\n    q = 2\n    h = lambda y: y * q\n    return h(m)\n"
    c = "def f(m):\n    q = 2\n    h = lambda y: y * m\n    return h(m)\n"  # reads another local
    assert code_fingerprint(a) == code_fingerprint(b)
    assert code_fingerprint(a) != code_fingerprint(c)


def test_locals_are_parameters_first_then_bound_names_in_source_order():
    tree = ast.parse("def f(a, *b, c, **d):\n    global g\n    x = 1\n    for y in b: g = y\n    def h(): z = 1\n")
    assert bound_locals(tree.body[0]) == ["a", "b", "c", "d", "x", "y", "h"]


def test_unparsable_code_has_no_fingerprint():
    assert code_fingerprint("def f(:\n") is None
