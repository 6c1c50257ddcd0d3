from pathlib import Path

import pytest

from infra.compose.experiment import (ExperimentConfig, arm_run_config, arm_spec, results_markdown, results_table,
                                      run_reshaping_file)
from producers.evaluation.run_folder import final_policy
from streams.reshaping.config import load_config, load_preset


def report(s1, pk):
    return {"overall": {"success_at_1": s1, "pass_at_k": {"1": pk / 2, "4": pk}, "mean_pass_fraction": s1,
                        "hacked_success_share": None}}


def test_results_table_over_seeds():
    reports = {("raw", 0, "validation"): report(0.1, 0.3), ("raw", 1, "validation"): report(0.3, 0.5),
               ("base", 0, "validation"): report(0.0, 0.2)}
    rows = {(r["arm"], r["metric"]): r for r in results_table(reports)}
    raw = rows["raw", "success_at_1"]
    # mean 0.2, sample std 0.1414, n 2: half width 12.706 * 0.1414 / sqrt(2) = 1.2706
    assert raw["mean"] == pytest.approx(0.2) and raw["ci95_half_width"] == pytest.approx(1.2706, rel=1e-3)
    assert rows["raw", "pass_at_k"]["mean"] == pytest.approx(0.4)  # the largest k
    assert rows["base", "success_at_1"]["ci95_half_width"] is None  # one seed
    assert rows["raw", "hacked_success_share"]["text"] == "-"
    md = results_markdown(results_table(reports))
    assert md.index("| base |") < md.index("| raw |") and "n=1" in md


def test_final_policy_is_newest(tmp_path):
    assert final_policy(tmp_path) == (None, 0)
    for v in (1, 12, 3):
        (tmp_path / "policy" / f"v-{v:08d}").mkdir(parents=True)
    path, version = final_policy(tmp_path)
    assert version == 12 and path.name == "v-00000012"


def test_each_run_has_the_arm_rules_and_its_own_topics(tmp_path):
    cfg = ExperimentConfig(out_dir=tmp_path, name="exp", seeds=[0, 1])
    written = load_config(run_reshaping_file(cfg, "raw", 0))
    assert written.config_id == load_preset("raw").config_id
    first, second = arm_run_config(cfg, "raw", 0), arm_run_config(cfg, "raw", 1)
    assert first.topics.prefix == "exp-raw-s0." and second.topics.prefix == "exp-raw-s1."
    assert first.topics.advantages(written.config_id) != second.topics.advantages(written.config_id)


def test_paired_table_pairs_tasks_within_seeds():
    from infra.compose.experiment import paired_markdown, paired_table

    def cand(task, passed):
        return {"task_id": task, "bug_pattern": "p", "greedy": True, "passed": passed,
                "pass_fraction": float(passed), "tree_edit_distance": 0.0, "style_class": "clean",
                "hack_flags": [], "completion_text": "", "error_kind": "none", "error_message": ""}

    reports = {("base", 0, "v"): {"candidates": [cand("t1", False), cand("t2", False)]},
               ("full", 0, "v"): {"candidates": [cand("t1", True), cand("t2", False)]},
               ("base", 1, "v"): {"candidates": [cand("t1", True), cand("t2", False)]},
               ("full", 1, "v"): {"candidates": [cand("t1", True), cand("t2", True)]}}
    (row,) = paired_table(reports, resamples=2000)
    assert (row["a"], row["b"], row["tasks"]) == ("base", "full", 4)  # two tasks of each seed
    assert row["greedy"]["mean"] == pytest.approx(0.5)
    assert (row["mcnemar"]["only_a"], row["mcnemar"]["only_b"]) == (0, 2)
    assert row["mcnemar"]["p_value"] == pytest.approx(0.5)
    assert "| v | full − base | 4 | +0.500" in paired_markdown([row])
    assert row["sample_pass_rate"] is None and "| – |" in paired_markdown([row])  # greedy only


def test_an_arm_can_change_run_settings(tmp_path):
    from infra.compose.experiment import arm_config, arm_run_config

    cfg = ExperimentConfig(out_dir=tmp_path, name="exp", seeds=[0],
                           run={"steps": 3, "group_size": 4, "learner": {"learning_rate": 1e-4, "lora_r": 8}},
                           arms={"raw": "raw", "raw-ds": {"reshaping": "raw", "run": {
                               "learner": {"drop_uniform_groups": True, "is_cap": 3.0}, "steps": 5}}})
    plain, dynamic = arm_run_config(cfg, "raw", 0), arm_run_config(cfg, "raw-ds", 0)
    assert (plain.learner.drop_uniform_groups, plain.steps, plain.learner.is_cap) == (False, 3, 2.0)
    assert (dynamic.learner.drop_uniform_groups, dynamic.steps, dynamic.group_size) == (True, 5, 4)
    # the arm changes its two learner knobs; the shared ones it does not name stay
    assert (dynamic.learner.is_cap, dynamic.learner.learning_rate, dynamic.learner.lora_r) == (3.0, 1e-4, 8)
    assert arm_config(cfg.arms["raw-ds"]).model_dump(exclude={"name"}) == load_preset("raw").model_dump(
        exclude={"name"})
    with pytest.raises(ValueError):
        ExperimentConfig(arms={"x": {"reshaping": "raw", "unknown": 1}})


PRESETS = sorted((Path(__file__).resolve().parents[2] / "producers" / "evaluation" / "presets").glob("*.yaml"))


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_gives_a_valid_run_for_each_arm_and_seed(preset, tmp_path):
    cfg = ExperimentConfig.from_yaml(preset).model_copy(update={"out_dir": tmp_path})  # configs are written
    for arm in cfg.arms:
        for seed in cfg.seeds:
            run = arm_run_config(cfg, arm, seed)
            assert run.steps >= 1 and run.seed == seed


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_s_full_arm_repeats_its_evaluation_and_raw_does_not(preset):
    cfg = ExperimentConfig.from_yaml(preset)
    repeats = {arm_spec(spec).reshaping: arm_run_config(cfg, arm, cfg.seeds[0]).evaluator.repeats
               for arm, spec in cfg.arms.items()}
    assert repeats["full"] > 1 and repeats["raw"] == 1


def test_the_1k_preset_is_the_grid_it_promises(tmp_path):
    cfg = ExperimentConfig.from_yaml(next(p for p in PRESETS if p.stem == "cpu-1k")).model_copy(
        update={"out_dir": tmp_path})
    runs = [arm_run_config(cfg, arm, seed) for arm in cfg.arms for seed in cfg.seeds]
    assert len(runs) == 9 and all(r.steps * r.groups_per_step * r.group_size >= 1000 for r in runs)
    assert sorted(r.learner.drop_uniform_groups for r in runs) == [False] * 6 + [True] * 3
    assert all(r.frontier.enabled for r in runs)
    assert cfg.eval.max_tasks >= 100 and cfg.eval.k == 4 and cfg.eval.backend == "ctranslate2"


def test_the_evaluation_engine_is_one_the_evaluator_knows():
    with pytest.raises(ValueError):
        ExperimentConfig(eval={"backend": "vllm"})


def test_held_out_success_while_training_is_on_in_the_gpu_preset_only(tmp_path):
    for preset in PRESETS:
        cfg = ExperimentConfig.from_yaml(preset).model_copy(update={"out_dir": tmp_path})
        run = arm_run_config(cfg, next(iter(cfg.arms)), cfg.seeds[0])
        assert run.heldout.enabled == (preset.stem == "gpu"), preset.stem


def test_design_preset_is_the_registered_design_and_its_detectable_differences_are_computed(tmp_path):
    import re

    from producers.evaluation.metrics import mcnemar_detectable_difference

    path = next(p for p in PRESETS if p.stem == "design")
    cfg = ExperimentConfig.from_yaml(path).model_copy(update={"out_dir": tmp_path})
    assert list(cfg.arms) == ["raw-ds", "binary", "layered", "full"] and len(cfg.seeds) >= 3
    runs = {(arm, seed): arm_run_config(cfg, arm, seed) for arm in cfg.arms for seed in cfg.seeds}
    assert all(r.max_generated_groups * r.group_size >= 1000 and r.frontier.enabled for r in runs.values())
    assert {r.corpus_config() for r in runs.values()} == {runs["full", 0].corpus_config()}  # one corpus
    assert [a for (a, s), r in runs.items() if r.learner.drop_uniform_groups and s == 0] == ["raw-ds"]
    assert cfg.eval.sets == ["validation", "humaneval", "heldout_pattern"] and cfg.eval.max_tasks >= 100
    assert cfg.eval.greedy_only and cfg.analysis.primary == [("binary", "full"), ("raw-ds", "full")]
    lines = re.findall(r"# mde: pairs=(\d+) discordant=([\d.]+) alpha=([\d.]+) -> ([\d.]+)", path.read_text())
    assert len(lines) == 6
    for pairs, discordant, alpha, written in lines:
        assert int(pairs) == cfg.eval.max_tasks * len(cfg.seeds)
        assert float(written) == pytest.approx(
            mcnemar_detectable_difference(int(pairs), float(discordant), float(alpha)), abs=5e-4)


def test_detectable_difference_inverts_the_pairs_needed():
    from producers.evaluation.metrics import mcnemar_detectable_difference, mcnemar_pairs_needed

    d = mcnemar_detectable_difference(300, 0.10, 0.05)
    assert mcnemar_pairs_needed(d, 0.10, 0.05, 0.8) == pytest.approx(300, rel=1e-6)
    assert mcnemar_detectable_difference(3000, 0.10, 0.05) < d < mcnemar_detectable_difference(100, 0.10, 0.05)
    assert mcnemar_detectable_difference(5, 0.10, 0.05) == 0.10  # out of reach: no difference up to psi is


def test_each_arm_is_evaluated_with_the_prompt_its_generator_trained_with(tmp_path):
    from infra.compose.experiment import arm_prompt

    cfg = ExperimentConfig(out_dir=tmp_path, name="exp", seeds=[0],
                           arms={"raw": "raw", "raw-error": {"reshaping": "raw", "run": {
                               "generator": {"include_error_context": True, "max_error_chars": 300}}}})
    assert arm_prompt(cfg, "raw", 0) == {"include_error_context": False, "max_error_chars": 2000}
    assert arm_prompt(cfg, "raw-error", 0) == {"include_error_context": True, "max_error_chars": 300}
