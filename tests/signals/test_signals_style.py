import pytest

from streams.signals import check_style


def test_black_formatted_code_without_codes_is_clean():
    report = check_style("def f(a, b):\n    return a + b\n")
    assert (report.style_class, report.codes, report.black_clean) == ("clean", [], True)


def test_spacing_problems_are_autofix():
    report = check_style("def f(a,b):\n    return a+b\n")
    assert report.style_class == "autofix"
    assert report.codes == ["E226", "E231"]
    assert not report.black_clean


def test_black_changes_alone_make_autofix():
    # pycodestyle accepts single quotes, black rewrites them
    report = check_style("def f():\n    return 'a'\n")
    assert report.codes == []
    assert (report.style_class, report.black_clean) == ("autofix", False)


@pytest.mark.parametrize(
    "code, expected_code",
    [
        ("import os\n\n\ndef f():\n    return 1\n", "F401"),  # unused import
        ("def f():\n    return y\n", "F821"),  # undefined name
        ("def f():\n    x = 1\n    return 2\n", "F841"),  # unused local
        (
            "def f(a):\n    try:\n        return 1 / a\n    except:\n        return 0\n",
            "E722",
        ),  # bare except
        ("def f(a):\n    return a == None\n", "E711"),
    ],
)
def test_logical_problems(code, expected_code):
    report = check_style(code)
    assert report.style_class == "logical"
    assert expected_code in report.codes


def test_logical_wins_over_formatting():
    report = check_style("import os\ndef f(a,b):\n    return a+b\n")
    assert report.style_class == "logical"
    assert {"F401", "E231", "E302"} <= set(report.codes)


def test_unparsable_code():
    report = check_style("def f(a, b)\n    return a\n")
    assert (report.style_class, report.codes, report.black_clean) == (
        "unparsable",
        [],
        False,
    )


def test_crlf_is_read_as_lf():
    assert check_style("def f(a, b):\r\n    return a + b\r\n").style_class == "clean"


def test_line_length_follows_black():
    line = "x = " + " + ".join(["1"] * 28) + "\n"  # 4 + 28 + 27*3 = 113 chars
    assert "E501" in check_style(line).codes
    assert (
        "E501" not in check_style("x = " + " + ".join(["1"] * 20) + "\n").codes
    )  # 81 chars


def test_mbpp_reference_solutions_are_not_logical(mbpp_first_ten):
    classes = {
        row["task_id"]: check_style(row["code"]).style_class for row in mbpp_first_ten
    }
    assert set(classes.values()) == {
        "autofix"
    }  # tabs, trailing spaces, no final newline
