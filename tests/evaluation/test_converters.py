import json

import pytest

from producers.evaluation.converters import convert_corpus, select_tasks
from producers.evaluation.taskfile import read_eval_tasks


def record(task_id, split, source):
    return {"task_id": task_id, "function_id": task_id[:4], "source": source, "split": split, "description": "",
            "entry_point": "f", "reference_code": "def f():\n    return 1\n", "buggy_code": "def f():\n    return 2\n",
            "test_setup_code": "", "test_imports": [], "tests": ["assert f() == 1"], "bug_pattern": "wrong_constant",
            "difficulty": 0.1, "seed": 0}


CORPUS = [record("m-2", "validation", "mbpp"), record("m-1", "validation", "mbpp"), record("t-1", "train", "mbpp"),
          record("h-1", "heldout", "humaneval"), record("h-0", "heldout", "humaneval")]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    return path


def test_validation_and_humaneval_sets(corpus, tmp_path):
    assert convert_corpus(corpus, tmp_path / "val.jsonl", "validation") == 2
    assert convert_corpus(corpus, tmp_path / "he.jsonl", "humaneval") == 2
    val = read_eval_tasks(tmp_path / "val.jsonl")
    he = read_eval_tasks(tmp_path / "he.jsonl")
    assert [t["task_id"] for t in val] == ["m-1", "m-2"]  # one function each: function-id order
    assert [t["task_id"] for t in he] == ["h-0", "h-1"] and {t["source"] for t in he} == {"humaneval"}
    line = json.loads((tmp_path / "val.jsonl").read_text().splitlines()[0])
    assert "split" not in line and line["reference_code"].startswith("def f")


def test_limit_and_errors(corpus, tmp_path):
    assert [t["task_id"] for t in select_tasks(CORPUS, split="heldout", source="humaneval", limit=1)] == ["h-0"]
    with pytest.raises(ValueError, match="unknown eval set"):
        convert_corpus(corpus, tmp_path / "x.jsonl", "train")
    only_train = tmp_path / "train.jsonl"
    only_train.write_text(json.dumps(CORPUS[2]) + "\n")
    with pytest.raises(ValueError, match="no tasks"):
        convert_corpus(only_train, tmp_path / "y.jsonl", "validation")


def test_a_limited_set_spreads_over_functions_and_ignores_record_order():
    many = [dict(record(f"f{f}-{p}", "validation", "mbpp"), function_id=f"f{f}", bug_pattern=p)
            for f in range(4) for p in ("argument_swap", "off_by_one", "wrong_return")]
    picked = select_tasks(many, split="validation", limit=6)
    functions = [t["task_id"].split("-")[0] for t in picked]
    assert functions == ["f0", "f1", "f2", "f3", "f0", "f1"]  # every function once before any twice
    assert len({t["bug_pattern"] for t in picked[:4]}) > 1  # not the same pattern of every function
    assert [t["task_id"] for t in select_tasks(many[::-1], split="validation", limit=6)] == \
        [t["task_id"] for t in picked]


def test_the_held_out_pattern_set_and_the_visible_test_travel_to_the_eval_file(tmp_path):
    from producers.evaluation.converters import EmptyEvalSetError

    shown = dict(record("v-1", "heldout_pattern", "mbpp"), tests=["assert f() == 1"],
                 visible_tests=["assert f() + 0 == 1"], error_context="expected 1, got 2")
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in CORPUS + [shown]))
    assert convert_corpus(path, tmp_path / "hp.jsonl", "heldout_pattern") == 1
    (task,) = read_eval_tasks(tmp_path / "hp.jsonl")
    assert task["task_id"] == "v-1" and task["tests"] == ["assert f() == 1"]
    assert task["visible_tests"] == ["assert f() + 0 == 1"] and task["error_context"] == "expected 1, got 2"
    # a corpus built without held-out patterns has no such set
    without = tmp_path / "plain.jsonl"
    without.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    with pytest.raises(EmptyEvalSetError):
        convert_corpus(without, tmp_path / "none.jsonl", "heldout_pattern")
    # old records (no visible test) read with the defaults
    convert_corpus(without, tmp_path / "val.jsonl", "validation")
    assert all(t["visible_tests"] == [] and t["error_context"] == "" for t in read_eval_tasks(tmp_path / "val.jsonl"))


def test_eval_sets_writes_the_held_out_pattern_set_only_when_the_corpus_has_one(tmp_path):
    from typer.testing import CliRunner

    from infra.compose.cli import app

    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    result = CliRunner().invoke(app, ["eval-sets", "--corpus", str(plain), "--out-dir", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["humaneval.jsonl", "validation.jsonl"]
    held = tmp_path / "held.jsonl"
    held.write_text("".join(json.dumps(r) + "\n" for r in CORPUS + [record("v-1", "heldout_pattern", "mbpp")]))
    result = CliRunner().invoke(app, ["eval-sets", "--corpus", str(held), "--out-dir", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert [t["task_id"] for t in read_eval_tasks(tmp_path / "b" / "heldout_pattern.jsonl")] == ["v-1"]
