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


IMPORT_TASK = normalise_task({
    "task_id": "mean", "entry_point": "mean", "bug_pattern": "off_by_one",
    "buggy_code": "import math\nfrom typing import List\n\n\ndef mean(xs: List[float]) -> int:\n"
                  "    return math.floor(sum(xs) / (len(xs) + 1))\n",
    "reference_code": "import math\nfrom typing import List\n\n\ndef mean(xs: List[float]) -> int:\n"
                      "    return math.floor(sum(xs) / len(xs))\n",
    "tests": ["assert mean([1.0, 2.0]) == 1", "assert mean([4.0]) == 4"]})
# the fix a model writes when it rewrites only the function
FUNCTION_ONLY = "```python\ndef mean(xs: List[float]) -> int:\n    return math.floor(sum(xs) / len(xs))\n```"


def test_a_correct_repair_without_the_task_imports_passes(pool):
    report = evaluate_policy(None, [IMPORT_TASK], k=1, pool=pool, generate=lambda ts, p: [[FUNCTION_ONLY] * p.n] * len(ts))
    assert report.overall.success_at_1 == 1.0 and report.import_name_errors == 0


def test_rescore_without_the_rule_shows_the_name_errors(pool):
    from producers.evaluation.eval import EVAL_EVALUATOR, rescore
    from producers.evaluation.import_effect import import_effect

    written = evaluate_policy(None, [IMPORT_TASK], k=2, pool=pool,
                              generate=lambda ts, p: [[FUNCTION_ONLY] * p.n] * len(ts)).to_dict()
    before = rescore(written, [IMPORT_TASK], pool, EVAL_EVALUATOR.model_copy(update={"carry_task_imports": False}))
    assert before.overall.success_at_1 == 0.0 and before.import_name_errors == 3  # 1 greedy + 2 samples
    assert before.candidates[0].error_message.startswith("NameError")
    sides = import_effect(written, [IMPORT_TASK], pool)
    assert sides["before"]["import_name_errors"] == 3 and sides["after"]["import_name_errors"] == 0
    assert sides["after"]["success_at_1"] == 1.0


def test_greedy_only_generates_one_candidate_per_task(tasks, pool):
    calls = []

    def generate(ts, params):
        calls.append(params.temperature)
        return [[f"```python\n{t['reference_code']}```"] * params.n for t in ts]

    report = evaluate_policy(None, tasks, k=4, pool=pool, generate=generate, greedy_only=True)
    assert calls == [0.0] and report.overall.candidates == len(tasks) and report.overall.pass_at_k == {}
    assert report.overall.success_at_1 == 1.0 and report.settings["n"] == 0


def test_table_fits_80_columns_with_a_legend(tasks, pool):
    from rich.console import Console

    many = [normalise_task({**TASKS[0], "task_id": f"t{i}", "bug_pattern": "boundary_check_deleted"})
            for i in range(3)]
    report = evaluate_policy(None, many + tasks, k=4, pool=pool, generate=answers("reference_code"))
    console = Console(width=80, record=True)
    render_table(report, console=console)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text and "boundary_check_deleted" in text and "p@4" in text
    assert "pf, clean, hack: over all candidates (1 greedy + 4 samples a task)" in text


def test_cli_limit_and_greedy_only_counts(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import producers.evaluation.eval as eval_module
    from infra.compose.cli import app
    from producers.evaluation.taskfile import write_eval_tasks

    bug_set = [normalise_task({**TASKS[0], "task_id": f"add{i}", "function_id": f"fn{i % 3}"}) for i in range(9)]
    path = write_eval_tasks(tmp_path / "set.jsonl", bug_set)
    seen = []

    def fake_load(*args, **kwargs):
        def generate(ts, params):
            seen.append((len(ts), params.n, params.temperature))
            return [[f"```python\n{t['reference_code']}```"] * params.n for t in ts]
        return generate

    monkeypatch.setattr(eval_module, "load_generate", fake_load)
    run = tmp_path / "runs" / "r1"
    (run / "policy").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    result = CliRunner().invoke(app, ["eval", "--tasks", str(path), "--model", str(tmp_path / "model"),
                                      "--limit", "3", "--greedy-only", "--workers", "1",
                                      "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["settings"]["tasks"] == 3 and len(data["candidates"]) == 3
    assert all(temperature == 0.0 for _, _, temperature in seen)
    # spread over functions: the three tasks are of three different functions
    assert len({int(c["task_id"][3:]) % 3 for c in data["candidates"]}) == 3


def test_default_report_path_is_in_the_run_folder(tmp_path):
    from pathlib import Path

    from producers.evaluation.cli import default_report_path

    sets = Path("eval_sets/validation.jsonl")
    assert default_report_path(sets, None, tmp_path / "r1", 5, False) == tmp_path / "r1" / "eval" / "validation-v5.json"
    assert default_report_path(sets, Path("m/smol"), None, 0, True) == Path("runs/eval-smol/validation-v0-greedy.json")


def test_evaluation_prompts_as_the_generator_does_and_never_scores_the_visible_test(pool):
    from transformers import AutoTokenizer

    from producers.evaluation.eval import hf_generate
    from producers.generator.model_store import cached_smollm2
    from schemas.prompt import render_task_prompt

    tokenizer = AutoTokenizer.from_pretrained(cached_smollm2())
    task = normalise_task({**TASKS[0], "tests": TASKS[0]["tests"][1:], "visible_tests": TASKS[0]["tests"][:1],
                           "error_context": "expected 3, got -1"})

    class Backend:  # answers the reference; keeps the prompts it was given
        def __init__(self):
            self.tokenizer, self.prompts = tokenizer, []

        def generate(self, prompts, params):
            from types import SimpleNamespace
            self.prompts += prompts
            return [[SimpleNamespace(text=f"```python\n{task['reference_code']}```")] * params.n for _ in prompts]

    for include in (False, True):
        backend = Backend()
        report = evaluate_policy(None, [task], generate=hf_generate(backend, include), pool=pool, greedy_only=True)
        assert backend.prompts == [render_task_prompt(tokenizer, task, include)]
        assert ("expected 3, got -1" in tokenizer.decode(backend.prompts[0])) is include
        assert report.overall.success_at_1 == 1.0
        # the two hidden tests are scored; the visible one is not
        assert report.candidates[0].pass_fraction == 1.0


def test_cli_error_context_reaches_the_prompt_settings(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import producers.evaluation.eval as eval_module
    from infra.compose.cli import app
    from producers.evaluation.taskfile import write_eval_tasks

    path = write_eval_tasks(tmp_path / "set.jsonl", [normalise_task(TASKS[0])])
    given = []

    def fake_load(*args, **kwargs):
        given.append(kwargs)
        return lambda ts, params: [[f"```python\n{t['reference_code']}```"] * params.n for t in ts]

    monkeypatch.setattr(eval_module, "load_generate", fake_load)
    for flag, expected in (([], False), (["--error-context"], True)):
        out = tmp_path / f"r{expected}.json"
        result = CliRunner().invoke(app, ["eval", "--tasks", str(path), "--model", str(tmp_path / "model"),
                                          "--greedy-only", "--workers", "1", "--out", str(out), *flag])
        assert result.exit_code == 0, result.output
        assert given[-1]["include_error_context"] is expected
        assert json.loads(out.read_text())["settings"]["include_error_context"] is expected
