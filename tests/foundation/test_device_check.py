"""The GPU check script, at CPU sizes: every part end to end, and the sanity loop's bookkeeping
(band, dynamic sampling, paired difference) with a scripted policy whose pass rates are known."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from producers.generator.backends.base import Sample
from producers.generator.model_store import build_tiny_model, cached_smollm2
from schemas.prompt import render_prompt
from streams.sandbox import SandboxConfig, SandboxPool

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "device_check.py"


def _task(name: str, op: str, wrong: str, cases: list[tuple[int, int, int]]) -> dict:
    reference = f"def {name}(a, b):\n    return a {op} b\n"
    return {"task_id": f"t-{name}", "function_id": f"f-{name}", "source": "custom", "split": "train",
            "description": "", "entry_point": name, "reference_code": reference,
            "buggy_code": reference.replace(f" {op} ", f" {wrong} "), "test_setup_code": "", "test_imports": [],
            "bug_pattern": "operator_swap", "difficulty": 0.3, "seed": 0,
            "tests": [f"assert {name}({a}, {b}) == {c}" for a, b, c in cases]}  # fmt: skip


TASKS = [_task("add", "+", "-", [(1, 2, 3), (5, 5, 10)]), _task("mul", "*", "+", [(2, 3, 6), (4, 4, 16)]),
         _task("sub", "-", "+", [(5, 2, 3), (1, 1, 0)])]  # fmt: skip


@pytest.fixture(scope="module")
def device_check():
    spec = importlib.util.spec_from_file_location("device_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_check"] = module  # its dataclasses resolve their annotations there
    spec.loader.exec_module(module)
    yield module
    del sys.modules["device_check"]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), cached_smollm2())


class ScriptedBackend:
    """Answers each prompt with its task's reference for the first `right` of K samples and
    the buggy code for the rest: every task's pass rate is right / K, whatever the policy."""

    def __init__(self, model_dir: Path, tasks: list[dict], right: int):
        import torch

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.device = torch.device("cpu")
        self.policy_version, self.policy_location, self.loads = 0, str(model_dir), []
        self.right = right
        self.by_prompt = {tuple(render_prompt(self.tokenizer, t["buggy_code"])): t for t in tasks}

    def generate(self, prompts, params):
        groups = []
        for prompt in prompts:
            task = self.by_prompt[tuple(prompt)]
            texts = [task["reference_code"] if i < self.right else task["buggy_code"] for i in range(params.n)]
            groups.append([self._sample(f"```python\n{text}```") for text in texts])
        return groups

    def _sample(self, text: str) -> Sample:
        ids = self.tokenizer.encode(text)[:24]
        return Sample(ids, [-1.0] * len(ids), text, "stop")

    def load_policy(self, version: int, location: str) -> None:
        self.policy_version, self.policy_location = version, location
        self.loads.append(version)


def test_sanity_loop_trains_only_on_the_band_and_pairs_the_same_tasks(device_check, tiny_model_dir, tmp_path):
    scale = device_check.dataclasses.replace(device_check.TINY, probe_tasks=3, k=4, train_steps=2,
                                             groups_per_step=2, max_new_tokens=24)  # fmt: skip
    backend = ScriptedBackend(tiny_model_dir, TASKS, right=2)
    with SandboxPool(SandboxConfig(workers=1)) as pool:
        result = device_check.sanity_check(backend, tiny_model_dir, TASKS, scale, device_check.Budget(600), pool,
                                           tmp_path)  # fmt: skip
    assert result["band_size"] == 3 and result["all_fail"] == 0  # every task passes 2 of 4
    assert [s["step"] for s in result["steps"]] == [1, 2]
    assert all(s["trained_groups"] == 2 and s["train_pass_rate"] == 0.5 for s in result["steps"])
    assert backend.loads == [1, 2, 0]  # each step's policy served, then the base for its evaluation
    assert result["difference"] == {"mean": 0.0, "low": 0.0, "high": 0.0, "n": 3}
    assert result["verdict"] == "no clear change"


def test_an_all_fail_probe_stops_before_training(device_check, tiny_model_dir, tmp_path):
    backend = ScriptedBackend(tiny_model_dir, TASKS, right=0)
    with SandboxPool(SandboxConfig(workers=1)) as pool:
        result = device_check.sanity_check(backend, tiny_model_dir, TASKS, device_check.TINY,
                                           device_check.Budget(600), pool, tmp_path)  # fmt: skip
    assert result["band_size"] == 0 and result["all_fail"] == 3
    assert "steps" not in result and backend.loads == []


def test_the_script_runs_every_part_with_the_tiny_stand_in(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--tasks", str(tasks), "--tokenizer",
                           str(cached_smollm2()), "--out", str(out), "--sandbox-workers", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "device_check.json").read_text())
    assert report["learner_step"]["no_checkpointing"]["step_over_plain"] > 0
    assert report["generation"]["tokens"] > 0 and report["generation"]["sequences_per_call"] == 4
    assert report["sanity"]["probe_tasks"] == 3
    assert "smoke only" in report["sanity"]["note"]


def test_a_missing_tasks_file_is_a_clear_error(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--tasks", str(tmp_path / "none.jsonl"), "--tokenizer", "x"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode != 0 and "tasks file not found" in done.stderr
