"""The experiment's unit is one run: finished runs are skipped, cut ones resumed, lost ones redone,
and the tables come back byte for byte from the per-run results alone. Training and evaluation
are replaced by steps that write what the real ones write (a run folder with its report and
policies; evaluation reports with per-task candidates), so the planning is what is tested."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from infra.compose.experiment import (ExperimentConfig, UnitSteps, rerun, run_experiment, run_name, unit_action,
                                      write_report)
from infra.compose.experiment_plan import (BASE, RunFolder, Unit, decide, folder_manifest_intact, manifest_intact,
                                           manifest_of, order_units)

TASKS = {"validation": [{"task_id": f"v{i}"} for i in range(6)], "humaneval": [{"task_id": f"h{i}"} for i in range(4)]}


class Killed(Exception):
    """Stands for the machine going away in the middle of a run."""


class FakeSteps:
    """Records every call; `kill_during` cuts that run after its folder and config exist."""

    def __init__(self, kill_during: str | None = None):
        self.trained: list[tuple[str, bool]] = []
        self.evaluated: list[tuple[str, int]] = []
        self.kill_during = kill_during

    def train(self, run_cfg, resume: bool) -> Path:
        self.trained.append((run_cfg.name, resume))
        run_dir = run_cfg.run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "run.yaml").write_text(yaml.safe_dump(run_cfg.recorded(), sort_keys=False))
        if run_cfg.name == self.kill_during:
            self.kill_during = None  # killed once
            raise Killed(run_cfg.name)
        (run_dir / "policy" / "v-00000002").mkdir(parents=True, exist_ok=True)
        report = run_dir / "report"
        report.mkdir(exist_ok=True)
        (report / "run.yaml").write_text((run_dir / "run.yaml").read_text())
        (report / "learner_metrics.csv").write_text("step,policy_version\n1,1\n2,2\n")
        (report / "summary.json").write_text(json.dumps({
            "config_id": "c", "seconds": 12.5, "interrupted": False, "learner_steps": 2, "policy_version": 2,
            "rollouts": {"generated": 16, "groups_generated": 4, "trained": 12, "groups_dropped_uniform": 1},
            "by_policy_version": [{"policy_version": 0, "rollouts": 8, "pass_rate": 0.25, "reward_enhanced": 0.1,
                                   "advantage_mean": 0.0}]}))
        return run_dir

    def eval_sets(self, corpus_seed: int) -> dict[str, list[dict]]:
        return TASKS

    def evaluate(self, model, adapter, version, sets, seed, prompt) -> dict[str, dict]:
        self.evaluated.append((str(adapter.parent.parent.name) if adapter else BASE, version))
        # a policy's outcome depends on which policy it is: a deterministic, different pattern
        key = sum(map(ord, str(adapter))) + version
        out = {}
        for set_name, tasks in sets.items():
            cands = [{"task_id": t["task_id"], "bug_pattern": "p", "greedy": True,
                      "passed": (key + i) % 3 == 0, "pass_fraction": float((key + i) % 3 == 0),
                      "tree_edit_distance": 1.0, "style_class": "clean", "hack_flags": [], "completion_text": "x",
                      "error_kind": "none", "error_message": ""} for i, t in enumerate(tasks)]
            passed = [c["passed"] for c in cands]
            out[set_name] = {"model": "m", "adapter": str(adapter) if adapter else None, "policy_version": version,
                             "settings": {"k": 1}, "candidates": cands,
                             "overall": {"success_at_1": sum(passed) / len(passed), "pass_at_k": {},
                                         "mean_pass_fraction": sum(passed) / len(passed),
                                         "hacked_success_share": None}}
        return out

    def analyse(self, cfg, arm, seed, run_dir):
        return ([{"run": run_name(cfg, arm, seed), "config_name": a} for a in cfg.arms],
                {"arm": arm, "seed": seed, "successes": 0, "flagged_successes": 0, "flagged_share": None,
                 "top_samples": []})

    def steps(self) -> UnitSteps:
        return UnitSteps(train=self.train, eval_sets=self.eval_sets, evaluate=self.evaluate, analyse=self.analyse)


@pytest.fixture
def cfg(tmp_path):
    return ExperimentConfig(name="exp", out_dir=tmp_path, arms={"binary": "binary", "full": "full"}, seeds=[0, 1],
                            corpus_seed=7, run={"model": "tiny", "steps": 2},
                            eval={"sets": ["validation", "humaneval"], "greedy_only": True},
                            analysis={"primary": [["binary", "full"]], "resamples": 200})


def test_runs_go_seed_by_seed_across_arms_after_the_base():
    assert order_units(["binary", "full"], [0, 1], [7]) == [
        Unit(BASE, 7), Unit("binary", 0), Unit("full", 0), Unit("binary", 1), Unit("full", 1)]


@pytest.mark.parametrize("intact, folder, is_base, action", [
    (True, RunFolder(False, False), False, "complete"),
    (True, RunFolder(True, False), False, "complete"),
    (False, RunFolder(True, True), False, "finish"),
    (False, RunFolder(True, False), False, "resume"),
    (False, RunFolder(False, False), False, "start"),
    (False, RunFolder(False, False), True, "finish"),
])
def test_what_a_unit_needs(intact, folder, is_base, action):
    assert decide(intact, folder, is_base) == action


def test_a_manifest_holds_only_while_every_file_is_unchanged():
    files = {"eval/validation.json": b"{}", "summary.json": b"{\"a\": 1}"}
    text = json.dumps(manifest_of(files))
    assert manifest_intact(text, files)
    assert not manifest_intact(text, {**files, "summary.json": b"{\"a\": 2}"})
    assert not manifest_intact(text, {"summary.json": files["summary.json"]})
    assert not manifest_intact(None, files) and not manifest_intact("{}", files) and not manifest_intact("{", files)


def test_a_killed_experiment_resumes_without_redoing_finished_runs(cfg):
    first = FakeSteps(kill_during="exp-full-s0")
    with pytest.raises(Killed):
        run_experiment(cfg, progress=False, steps=first.steps())
    assert first.trained == [("exp-binary-s0", False), ("exp-full-s0", False)]
    assert first.evaluated == [(BASE, 0), ("exp-binary-s0", 2)]  # the finished run was evaluated at once
    assert folder_manifest_intact(cfg.unit_dir(Unit("binary", 0)))
    assert not cfg.unit_dir(Unit("full", 0)).exists()
    assert unit_action(cfg, Unit("full", 0)) == "resume"

    again = FakeSteps()
    run_experiment(cfg, progress=False, steps=again.steps())
    # nothing finished is trained or evaluated again; the cut run is resumed, the rest started
    assert again.trained == [("exp-full-s0", True), ("exp-binary-s1", False), ("exp-full-s1", False)]
    assert [name for name, _ in again.evaluated] == ["exp-full-s0", "exp-binary-s1", "exp-full-s1"]
    assert all(unit_action(cfg, u) == "complete" for u in cfg.units())

    results = json.loads((cfg.dir / "results.json").read_text())
    assert results["units"] == 5 and len(results["complete_units"]) == 5
    run = next(r for r in results["runs"] if r["folder"] == "full-s1")
    assert run["rollouts"] == {"generated": 16, "groups_generated": 4, "trained": 12, "groups_dropped_uniform": 1}
    assert set(run["eval"]["validation"]["greedy_passed"]) == {f"v{i}" for i in range(6)}
    (primary_validation, primary_humaneval) = results["primary"]
    assert primary_validation["family_size"] == 2 and primary_validation["family_complete"]
    assert primary_validation["tasks"] == 12  # 6 tasks x 2 seeds, paired within seeds
    assert primary_validation["holm_p_value"] >= primary_validation["mcnemar"]["p_value"]
    # the base, evaluated once, is paired with every seed's runs
    assert any(r["a"] == BASE and r["b"] == "full" and r["tasks"] == 12 for r in results["paired"])


def test_a_run_whose_results_and_folder_are_gone_is_redone(cfg):
    run_experiment(cfg, progress=False, steps=FakeSteps().steps())
    shutil.rmtree(cfg.unit_dir(Unit("full", 1)))
    shutil.rmtree(cfg.dir / "runs" / "exp-full-s1")
    steps = FakeSteps()
    run_experiment(cfg, progress=False, steps=steps.steps())
    assert steps.trained == [("exp-full-s1", False)]
    assert folder_manifest_intact(cfg.unit_dir(Unit("full", 1)))


def test_a_run_with_results_but_no_folder_counts_as_done_and_a_damaged_result_is_rewritten(cfg):
    run_experiment(cfg, progress=False, steps=FakeSteps().steps())
    shutil.rmtree(cfg.dir / "runs")  # another machine: only the repository
    steps = FakeSteps()
    run_experiment(cfg, progress=False, steps=steps.steps())
    assert steps.trained == [] and steps.evaluated == []

    # a results file changed after it was sealed: the unit is no longer complete; with its
    # folder gone it is trained again
    report = cfg.unit_dir(Unit("binary", 0)) / "eval" / "validation.json"
    report.write_text(report.read_text().replace('"passed": false', '"passed": true', 1))
    assert unit_action(cfg, Unit("binary", 0)) == "start"


def test_results_rebuilt_from_the_committed_files_alone_are_identical(cfg, tmp_path):
    run_experiment(cfg, progress=False, steps=FakeSteps().steps())
    written = {name: (cfg.dir / name).read_bytes() for name in ("results.json", "results.md")}
    # a clone with only what the repository keeps: the config and the per-run results
    elsewhere = tmp_path / "clone"
    shutil.copytree(cfg.results_dir, elsewhere / "exp" / "results")
    clone = cfg.model_copy(update={"out_dir": elsewhere})
    write_report(clone)
    for name, data in written.items():
        assert (clone.dir / name).read_bytes() == data, name
    assert b"| full | validation |" in written["results.md"]


def test_an_experiment_names_only_its_own_arms_in_its_comparisons():
    with pytest.raises(ValueError):
        ExperimentConfig(arms={"raw": "raw"}, analysis={"primary": [["raw", "full"]]})
    with pytest.raises(ValueError):
        ExperimentConfig(arms={"base": "raw"})
    with pytest.raises(ValueError):
        ExperimentConfig(eval={"sets": ["nope"]})


def test_a_partial_primary_family_is_adjusted_as_strictly_as_the_whole_one():
    from infra.compose.experiment_results import primary_table

    def report(passed):
        return {"candidates": [{"task_id": f"t{i}", "bug_pattern": "p", "greedy": True, "passed": p,
                                "pass_fraction": float(p), "tree_edit_distance": 0.0, "style_class": "clean",
                                "hack_flags": [], "completion_text": "", "error_kind": "none", "error_message": ""}
                               for i, p in enumerate(passed)]}

    reports = {("binary", 0, "validation"): report([False] * 10), ("full", 0, "validation"): report([True] * 10)}
    (row,) = primary_table(reports, [("binary", "full"), ("raw-ds", "full")], ["validation", "humaneval"], 0.05,
                           resamples=200)
    assert row["mcnemar"]["p_value"] == pytest.approx(2 / 2**10)  # 10 discordant, all one way
    assert row["holm_p_value"] == pytest.approx(4 * 2 / 2**10)  # the smallest of a family of 4
    assert (row["family_size"], row["family_complete"], row["rejected_at_alpha"]) == (4, False, True)


def test_a_rerun_trains_one_committed_run_again_in_its_own_folder_and_measures_agreement(cfg):
    with pytest.raises(ValueError, match="no complete results"):
        rerun(cfg, "full", 0, progress=False, steps=FakeSteps().steps())
    run_experiment(cfg, progress=False, steps=FakeSteps().steps())
    with pytest.raises(ValueError, match="no run"):
        rerun(cfg, "raw", 0, progress=False, steps=FakeSteps().steps())

    again = FakeSteps()
    agreement = rerun(cfg, "full", 0, progress=False, steps=again.steps())
    assert again.trained == [("exp-rerun-full-s0", False)]  # one run, under its own name; no base
    assert [name for name, _ in again.evaluated] == ["exp-rerun-full-s0"]
    folder = cfg.out_dir / "exp-rerun"
    assert json.loads((folder / "agreement.json").read_text()) == agreement
    assert "| validation |" in (folder / "agreement.md").read_text()
    # the committed experiment is untouched
    assert all(unit_action(cfg, u) == "complete" for u in cfg.units())
    # the fake policy's outcomes depend on the adapter's path, so the re-run differs from the
    # committed run on some tasks: the counts must say exactly where
    for set_name, tasks in TASKS.items():
        committed = json.loads((cfg.unit_dir(Unit("full", 0)) / "eval" / f"{set_name}.json").read_text())
        redone = json.loads((folder / "results" / "full-s0" / "eval" / f"{set_name}.json").read_text())
        a = {c["task_id"]: c["passed"] for c in committed["candidates"]}
        b = {c["task_id"]: c["passed"] for c in redone["candidates"]}
        s = agreement["sets"][set_name]
        assert s["tasks"] == len(tasks)
        assert s["same_greedy_outcome_share"] == round(sum(a[t] == b[t] for t in a) / len(a), 4)
        assert s["mcnemar"] == {"only_committed": sum(a[t] and not b[t] for t in a),
                                "only_rerun": sum(b[t] and not a[t] for t in a), "p_value": s["mcnemar"]["p_value"]}
        assert s["within_noise"] == (s["difference"]["low"] <= 0 <= s["difference"]["high"])
    assert agreement["training"]["committed"]["pass_rate"] == 0.25
