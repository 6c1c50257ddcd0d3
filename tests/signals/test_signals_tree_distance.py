from streams.signals import SignalConfig, tree_edit_distance

ADD = "def f(a, b):\n    return a + b\n"
SUB = "def f(a, b):\n    return a - b\n"


def test_identical_code_has_distance_zero_even_with_other_formatting():
    result = tree_edit_distance(ADD, "def f(a,b):\r\n    return (a+b)  # sum\r\n")
    assert (result.raw, result.normalised, result.method) == (0, 0.0, "ast")


def test_one_operator_change_is_one_relabel_over_nine_nodes():
    # Module, FunctionDef f, arguments, arg a, arg b, Return, BinOp, Name a, Name b
    result = tree_edit_distance(ADD, SUB)
    assert result.raw == 1
    assert result.normalised == 1 / 9


def test_distance_is_symmetric_for_an_inserted_statement():
    longer = "def f(a, b):\n    c = a\n    return a + b\n"  # + Assign, Name c, Name a = 3 nodes
    forward, backward = tree_edit_distance(ADD, longer), tree_edit_distance(longer, ADD)
    assert forward.raw == backward.raw == 3
    assert forward.normalised == backward.normalised == 3 / 12


def test_docstrings_and_ctx_do_not_count():
    documented = 'def f(a, b):\n    """Add."""\n    return a + b\n'
    assert tree_edit_distance(ADD, documented).raw == 0


def test_renamed_variable_costs_each_occurrence():
    renamed = "def f(x, b):\n    return x + b\n"  # arg a and Name a relabelled
    assert tree_edit_distance(ADD, renamed).raw == 2


def test_unparsable_candidate_is_distance_one():
    result = tree_edit_distance(ADD, "def f(a, b)\n    return a + b\n")
    assert (result.normalised, result.method, result.raw) == (1.0, "unparsable", 9)


def test_unparsable_buggy_code_falls_back_to_tokens():
    # missing colon: one token inserted among 17 (def f ( a , b ) : NEWLINE INDENT return a + b NEWLINE DEDENT ENDMARKER)
    result = tree_edit_distance("def f(a, b)\n    return a + b\n", ADD)
    assert result.method == "tokens"
    assert result.raw == 1
    assert result.normalised == 1 / 17


def test_huge_candidate_is_capped_without_computing():
    huge = (
        "def f(a, b):\n"
        + "".join(f"    a = a + {i}\n" for i in range(10))
        + "    return a\n"
    )
    result = tree_edit_distance(ADD, huge, SignalConfig(ted_node_cap=20))
    assert result.method == "capped"
    assert result.normalised == 1.0
    assert result.raw > 20


def test_normalised_distance_is_capped_at_one():
    other = "x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n"
    result = tree_edit_distance(ADD, other)
    assert result.raw >= 9
    assert result.normalised <= 1.0
