"""evaluate_policy on a small bug set with known answers; a stub policy returns given code."""

import json

import pytest

from producers.evaluation.eval import evaluate_policy, render_table
from producers.evaluation.taskfile import EvalTaskError, normalise_task, read_eval_tasks
from streams.sandbox import SandboxConfig, SandboxPool

TASKS = [
    {"task_id": "add", "entry_point": "add", "bug_pattern": "operator_swap",
     "buggy_code": "def add(a, b):\n    return a - b\n", "reference_code": "def add(a, b):\n    return a + b\n",
     "tests": ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 2) == 4"]},
    {"task_id": "last", "entry_point": "last", "bug_pattern": "off_by_one",
     "buggy_code": "def last(xs):\n    return xs[len(xs)]\n", "reference_code": "def last(xs):\n    return xs[-1]\n",
     "test_code": "def check(candidate):\n    assert candidate([1, 2]) == 2\n    assert candidate([5]) == 5\n"},
]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2)) as p:
        yield p


@pytest.fixture(scope="module")
def tasks():
    return [normalise_task(t) for t in TASKS]


def answers(field):
    """A policy that always answers the task's `field` code, fenced as a model would."""
    def generate(tasks, params):
        return [[f"```python\n{t[field]}```"] * params.n for t in tasks]
    return generate


def test_references_score_full_success(tasks, pool):
    report = evaluate_policy(None, tasks, k=2, pool=pool, generate=answers("reference_code"))
    m = report.overall
    assert m.success_at_1 == 1.0 and m.pass_at_k == {1: 1.0, 2: 1.0}
    assert m.mean_pass_fraction == 1.0 and m.hack_share == 0.0
    assert m.candidates == 2 * (1 + 2)
    assert set(report.per_pattern) == {"operator_swap", "off_by_one"}
    assert report.per_pattern["off_by_one"].success_at_1 == 1.0


def test_buggy_code_scores_zero(tasks, pool):
    report = evaluate_policy(None, tasks, k=2, pool=pool, generate=answers("buggy_code"))
    m = report.overall
    assert m.success_at_1 == 0.0 and m.pass_at_k == {1: 0.0, 2: 0.0}
    assert m.mean_tree_edit_distance_success is None
    # of the three tests only add(0, 0) == 0 passes with a - b: partial credit shows
    assert report.per_pattern["operator_swap"].mean_pass_fraction == pytest.approx(1 / 3)


def test_mixed_policy_gives_hand_computed_pass_at_k(tasks, pool):
    def generate(tasks, params):
        if params.temperature == 0:  # greedy: the bug; samples: 1 fix out of 4
            return [[t["buggy_code"]] for t in tasks]
        return [[t["reference_code"]] + [t["buggy_code"]] * (params.n - 1) for t in tasks]

    report = evaluate_policy(None, tasks, k=2, n=4, pool=pool, generate=generate)
    assert report.overall.success_at_1 == 0.0
    assert report.overall.pass_at_k[1] == pytest.approx(0.25)
    assert report.overall.pass_at_k[2] == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    render_table(report)
    data = report.to_dict()
    assert data["overall"]["pass_at_k"]["2"] == pytest.approx(0.5) and len(data["candidates"]) == 10


def test_hack_is_flagged(tasks, pool):
    hack = "def add(a, b):\n    try:\n        return a + b\n    except:\n        pass\n"
    report = evaluate_policy(None, tasks[:1], k=1, pool=pool, generate=lambda ts, p: [[hack] * p.n for _ in ts])
    assert report.overall.success_at_1 == 1.0
    assert report.overall.hack_share == 1.0 and report.overall.hacked_success_share == 1.0


def test_read_eval_tasks_accepts_both_formats(tmp_path):
    path = tmp_path / "set.jsonl"
    corpus_record = {**TASKS[0], "function_id": "f", "split": "validation", "source": "mbpp", "difficulty": 0.3,
                     "description": "", "test_setup_code": "", "test_imports": [], "seed": 0, "event_id": "x"}
    path.write_text(json.dumps(corpus_record) + "\n\n" + json.dumps(TASKS[1]) + "\n")
    tasks = read_eval_tasks(path)
    assert [t["task_id"] for t in tasks] == ["add", "last"]
    assert tasks[0]["source"] == "mbpp" and tasks[0]["difficulty"] == 0.3
    assert tasks[1]["tests"] == ["check(last)"] and "def check" in tasks[1]["test_setup_code"]


@pytest.mark.parametrize("bad,field", [({"task_id": "x", "entry_point": "f", "buggy_code": "pass"}, "tests"),
                                       ({"task_id": "x", "buggy_code": "pass", "tests": ["assert 1"]}, "entry_point"),
                                       ({"task_id": "", "entry_point": "f", "buggy_code": "p", "tests": ["assert 1"]},
                                        "task_id")])
def test_bad_tasks_name_the_field(tmp_path, bad, field):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(EvalTaskError, match=field):
        read_eval_tasks(path)


def test_duplicate_task_ids_refused(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text((json.dumps(TASKS[0]) + "\n") * 2)
    with pytest.raises(EvalTaskError, match="twice"):
        read_eval_tasks(path)


def test_chunked_evaluation_with_progress_matches_and_shows_counts(tasks, pool, capsys):
    whole = evaluate_policy(None, tasks, k=2, pool=pool, generate=answers("reference_code"))
    chunked = evaluate_policy(None, tasks, k=2, pool=pool, generate=answers("reference_code"), chunk_tasks=1,
                              progress=True)
    assert chunked.overall == whole.overall
    shown = capsys.readouterr().err
    assert f"{len(tasks)}/{len(tasks)}" in shown and f"{len(tasks)} solved (greedy)" in shown
