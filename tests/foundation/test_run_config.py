"""The run config: component sections with every knob, shared knobs declared once, version 1
files migrated, and what each component is handed."""

import pytest
import yaml
from pydantic import ValidationError

from infra.compose.run_config import RUN_CONFIG_VERSION, SHARED, RunConfig, deep_merge, load_run_config


def test_a_version_1_file_is_migrated_into_the_component_sections(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "name": "old", "learning_rate": 1e-4, "use_lora": False, "beta": 0.04,
        "dynamic_sampling": True, "frontier": True, "backend": "transformers", "compute_type": "float32",
        "top_p": 0.9, "max_inflight_groups": 3, "group_size": 6}))
    cfg = load_run_config(path)
    assert cfg.version == RUN_CONFIG_VERSION == 2
    assert (cfg.learner.learning_rate, cfg.learner.use_lora, cfg.learner.beta, cfg.learner.drop_uniform_groups) == (
        1e-4, False, 0.04, True)
    assert (cfg.generator.backend, cfg.generator.compute_type, cfg.generator.top_p,
            cfg.generator.max_inflight_groups) == ("transformers", "float32", 0.9, 3)
    assert cfg.frontier.enabled and cfg.group_size == 6
    # a file without a version but with version-1 keys is version 1
    assert RunConfig.model_validate({"learning_rate": 3e-4}).learner.learning_rate == 3e-4


def test_version_2_takes_no_top_level_component_knob_and_nothing_twice():
    with pytest.raises(ValidationError, match="learning_rate"):
        RunConfig.model_validate({"version": 2, "learning_rate": 1e-4})
    with pytest.raises(ValidationError, match="given twice"):
        RunConfig.model_validate({"version": 1, "beta": 0.1, "learner": {"beta": 0.2}})


@pytest.mark.parametrize(("section", "knob"), [(s, k) for s, owned in SHARED.items() for k in owned])
def test_a_shared_knob_set_in_a_component_is_refused_naming_where_it_goes(section, knob):
    value = {"model_dir": "/m", "checkpoint_dir": "/c", "publish_dir": "/p", "temperature": 0.5}.get(knob, 3)
    with pytest.raises(ValidationError, match=f"{section}.{knob} \\(set `{SHARED[section][knob]}`\\)"):
        RunConfig.model_validate({section: {knob: value}})


def test_the_recorded_config_loads_back_as_the_same_config(tmp_path):
    cfg = RunConfig(name="r", runs_dir=tmp_path, temperature=0.7, learner={"is_cap": 3.0, "lora_r": 4},
                    generator={"top_p": 0.9}, frontier={"enabled": True})
    recorded = cfg.recorded()
    assert "temperature" not in recorded["learner"] and "model_dir" not in recorded["generator"]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(recorded))
    assert load_run_config(path) == cfg


def test_each_component_gets_its_section_and_the_shared_knobs(tmp_path):
    from infra.compose.orchestrator import Orchestrator
    from learner.service import load_learn_config
    from producers.generator.service import GenerateRunConfig
    from streams.reshaping.config import load_preset

    cfg = RunConfig(name="r", runs_dir=tmp_path, temperature=0.7, max_new_tokens=99, group_size=3, seed=5,
                    max_policy_lag=1, groups_per_step=6, generator_threads=2, learner_threads=1, steps=12,
                    learner={"is_cap": 3.0, "lora_r": 4, "loss_type": "sequence_mean"},
                    generator={"top_p": 0.9}, frontier={"enabled": True}, curriculum={"unlock_threshold": 0.2})
    files = Orchestrator(cfg).write_configs(tmp_path / "model", load_preset("raw"))
    learn = load_learn_config(files["learner"])
    lc = learn.learner
    assert (lc.temperature, lc.max_completion_length, lc.seed, lc.max_policy_lag, lc.groups_per_step) == (
        0.7, 99, 5, 1, 6)
    assert (lc.is_cap, lc.lora_r, lc.loss_type, learn.threads, learn.steps) == (3.0, 4, "sequence_mean", 1, 12)
    assert lc.checkpoint_dir == cfg.run_dir / "learner" and lc.publish_dir == cfg.run_dir / "policy"
    gen = GenerateRunConfig.from_yaml(files["generator"])
    g = gen.generator
    assert (g.temperature, g.max_new_tokens, g.group_size, g.seed, g.max_policy_lag, g.threads, g.top_p) == (
        0.7, 99, 3, 5, 1, 2, 0.9)
    assert g.model_dir == tmp_path / "model" and gen.groups_per_step == 6
    assert gen.frontier.enabled and gen.frontier.min_samples == 3  # one group of K unless set
    assert gen.curriculum.unlock_threshold == 0.2
    assert load_run_config(files["run"]) == cfg


def test_deep_merge_changes_only_the_knobs_named():
    base = {"steps": 3, "learner": {"learning_rate": 1e-4, "lora_r": 8}}
    assert deep_merge(base, {"learner": {"beta": 0.1}, "steps": 5}) == {
        "steps": 5, "learner": {"learning_rate": 1e-4, "lora_r": 8, "beta": 0.1}}
    assert base == {"steps": 3, "learner": {"learning_rate": 1e-4, "lora_r": 8}}


def test_a_budget_of_generated_groups_sets_the_generator_cap_the_learner_budget_and_the_schedule(tmp_path):
    from infra.compose.orchestrator import Orchestrator
    from learner.service import load_learn_config
    from producers.generator.service import GenerateRunConfig
    from streams.reshaping.config import load_preset

    cfg = RunConfig(name="b", runs_dir=tmp_path, groups_per_step=4, max_generated_groups=250, corpus_seed=3, seed=1)
    assert cfg.steps == 63 and cfg.effective_corpus_seed == 3  # 62 full steps and one of 2 groups
    assert RunConfig.model_validate(cfg.recorded()).steps == 63  # the recorded config loads back
    with pytest.raises(ValueError, match="give one"):
        RunConfig(groups_per_step=4, max_generated_groups=250, steps=10)
    files = Orchestrator(cfg).write_configs(tmp_path / "model", load_preset("raw"))
    learn, gen = load_learn_config(files["learner"]), GenerateRunConfig.from_yaml(files["generator"])
    assert (gen.max_groups, learn.max_groups, learn.steps, learn.learner.max_steps) == (250, 250, 63, 63)
    assert RunConfig(name="n", seed=4).effective_corpus_seed == 4


def test_several_generators_get_their_ids_seeds_and_shares_of_one_budget(tmp_path):
    from infra.compose.orchestrator import Orchestrator
    from producers.generator.service import GenerateRunConfig
    from producers.generator.share import generator_seed
    from streams.reshaping.config import load_preset
    from streams.settings import StreamSettings

    cfg = RunConfig(name="m", runs_dir=tmp_path, seed=3, generators=3, workers=2, groups_per_step=2,
                    max_generated_groups=10, generator={"max_inflight_groups": 8})
    files = Orchestrator(cfg).write_configs(tmp_path / "model", load_preset("raw"))
    assert "generator" not in files
    gens = [GenerateRunConfig.from_yaml(files[f"generator-{i}"]) for i in range(3)]
    assert [g.generator_id for g in gens] == ["m-gen-0", "m-gen-1", "m-gen-2"]
    assert [g.generator.seed for g in gens] == [3, generator_seed(3, 1), generator_seed(3, 2)]
    assert len({g.generator.seed for g in gens}) == 3
    assert [(g.share.index, g.share.of) for g in gens] == [(0, 3), (1, 3), (2, 3)]
    # every generator is told the run's budgets; their shares of them add up to those budgets
    assert sum(g.share.part(g.max_groups) for g in gens) == 10
    assert sum(g.share.part(g.generator.max_inflight_groups) for g in gens) == 8
    assert StreamSettings.model_validate_json(files["streams"].read_text()).standby_replicas == 1


def test_one_worker_and_one_generator_are_configured_as_before(tmp_path):
    from infra.compose.orchestrator import Orchestrator
    from producers.generator.service import GenerateRunConfig
    from streams.reshaping.config import load_preset
    from streams.settings import StreamSettings

    cfg = RunConfig(name="s", runs_dir=tmp_path, seed=3)
    files = Orchestrator(cfg).write_configs(tmp_path / "model", load_preset("raw"))
    gen = GenerateRunConfig.from_yaml(files["generator"])
    assert (files["generator"].name, gen.generator_id, gen.generator.seed) == ("generator.yaml", "s-gen-0", 3)
    assert (gen.share.index, gen.share.of) == (0, 1)
    assert StreamSettings.model_validate_json(files["streams"].read_text()).standby_replicas == 0


def test_scaling_limits_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="exceeds the 4 partitions"):
        RunConfig(workers=5)
    with pytest.raises(ValueError, match="max_generated_groups 2 below generators 3"):
        RunConfig(generators=3, max_generated_groups=2)
    with pytest.raises(ValueError, match="max_inflight_groups 1 below generators 2"):
        RunConfig(generators=2, generator={"max_inflight_groups": 1})
