"""Loading the source functions: MBPP, HumanEval and where the data lives."""

import json

import pytest

from producers.corpus.functions import CorpusDataError
from producers.corpus.humaneval import humaneval_function_id, load_humaneval, split_check
from producers.corpus.mbpp import BROKEN_REFERENCES, find_entry_point, load_mbpp
from producers.corpus.paths import DATA_DIR_ENV, REPO_ROOT, data_dir


@pytest.fixture(scope="module")
def mbpp():
    return load_mbpp()


def test_mbpp_has_all_problems_but_the_three_broken_references(mbpp):
    assert len(mbpp) == 974 - 3
    ids = [f.function_id for f in mbpp]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {f"mbpp-{i:04d}" for i in BROKEN_REFERENCES}.isdisjoint(ids)
    assert ids[0] == "mbpp-0001" and ids[-1] == "mbpp-0974"


def test_mbpp_line_endings_are_normalised(mbpp):
    for function in mbpp:
        assert "\r" not in function.reference_code
        assert "\r" not in function.test_setup_code
        assert all("\r" not in t for t in function.tests)


def test_mbpp_fields_of_a_known_problem(mbpp):
    by_id = {f.function_id: f for f in mbpp}
    first = by_id["mbpp-0002"]
    assert first.entry_point == "similar_elements"
    assert first.source == "mbpp"
    assert first.description.startswith("Write a function to find the similar elements")
    assert first.tests[0].startswith("assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10))")
    assert len(first.tests) == 3
    # Only 367 and 927 have setup code; it builds trees from the class in `code`.
    with_setup = [f.function_id for f in mbpp if f.test_setup_code]
    assert with_setup == ["mbpp-0367", "mbpp-0927"]
    assert by_id["mbpp-0367"].test_setup_code.startswith("root = Node(1)")


def test_entry_point_is_the_called_function_not_a_helper():
    code = "def helper(x):\n    return x\n\ndef main(x):\n    return helper(x) + 1\n"
    assert find_entry_point(code, "assert main(helper(1)) == 2") == "main"
    with pytest.raises(CorpusDataError):
        find_entry_point(code, "assert other(1) == 2")


def test_data_dir_follows_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(CorpusDataError, match=DATA_DIR_ENV):
        data_dir()
    monkeypatch.delenv(DATA_DIR_ENV)
    assert data_dir() == REPO_ROOT.parent / "shared" / "data"


def test_mbpp_loader_reads_a_hand_made_file(tmp_path):
    (tmp_path / "mbpp").mkdir()
    rows = [
        {"task_id": 596, "text": "dropped", "code": "def g():\r\n  return 1", "test_setup_code": "",
         "test_list": ["assert g() == 2"], "challenge_test_list": []},
        {"task_id": 7, "text": "add one", "code": "def inc(x):\r\n  return x + 1",
         "test_setup_code": "", "test_list": ["assert inc(1) == 2"], "challenge_test_list": []},
    ]
    (tmp_path / "mbpp" / "mbpp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    [only] = load_mbpp(tmp_path)
    assert only.function_id == "mbpp-0007"
    assert only.reference_code == "def inc(x):\n  return x + 1\n"
    assert only.entry_point == "inc"


def test_humaneval_ids():
    assert humaneval_function_id("HumanEval/7") == "humaneval-0007"


def test_humaneval_simple_check_becomes_separate_asserts():
    test = (
        "\n\nMETADATA = {'author': 'jt'}\n\n\ndef check(candidate):\n"
        "    import math\n"
        "    assert candidate([1, 2]) == 3\n"
        "    assert candidate([]) == 0, 'empty'\n"
        "    assert True\n"
    )
    asserts, imports, setup = split_check(test, "total")
    assert asserts == ["assert total([1, 2]) == 3", "assert total([]) == 0, 'empty'"]
    assert imports == ["import math"]
    assert setup == ""  # METADATA is dropped


def test_humaneval_check_with_a_loop_stays_one_test():
    test = ("def check(candidate):\n    for x in range(3):\n"
            "        assert candidate(x) == x + 1\n")
    asserts, imports, setup = split_check(test, "inc")
    assert asserts == ["check(inc)"]
    assert imports == []
    assert setup == test


def test_humaneval_problems_loaded_from_the_package():
    problems = {f.function_id: f for f in load_humaneval()}
    assert len(problems) == 164
    first = problems["humaneval-0000"]
    assert first.source == "humaneval" and first.entry_point == "has_close_elements"
    assert first.tests[0] == "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    assert len(first.tests) == 7
    assert first.reference_code.startswith("from typing import List\n\n\ndef has_close_elements(")
    assert "for idx, elem in enumerate(numbers):" in first.reference_code  # canonical solution
    assert first.description.startswith("Check if in given list of numbers")
    # HumanEval/32 (find_zero) checks with a random loop: one check(...) test.
    find_zero = problems["humaneval-0032"]
    assert find_zero.tests == ("check(find_zero)",)
    assert "def check(candidate):" in find_zero.test_setup_code
