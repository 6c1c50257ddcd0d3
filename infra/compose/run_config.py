"""The typed configuration of `reshaper run`: one YAML for the whole loop. The resolved
config of every component is written into the run folder, so each run records what it used."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from infra.platform.settings import REPO_ROOT
from infra.platform.topics import DEFAULT_PARTITIONS, Topics
from learner.config import LearnerConfig
from producers.generator.config import GeneratorConfig
from producers.generator.scheduler import CurriculumConfig
from producers.generator.frontier import FrontierConfig
from streams.feedback.config import EvaluatorConfig
from producers.evaluation.periodic import HeldoutConfig

RUN_CONFIG_VERSION = 2

# Knobs the run declares once and hands to every component that needs them; the component
# sub-models below refuse them, so no value can be set twice and disagree.
SHARED = {
    "generator": {"model_dir": "model", "group_size": "group_size", "max_new_tokens": "max_new_tokens",
                  "temperature": "temperature", "seed": "seed", "max_policy_lag": "max_policy_lag",
                  "threads": "generator_threads"},
    "learner": {"groups_per_step": "groups_per_step", "max_policy_lag": "max_policy_lag",
                "max_completion_length": "max_new_tokens", "temperature": "temperature", "seed": "seed",
                "max_steps": "steps", "checkpoint_dir": "the run folder", "publish_dir": "the run folder"},
}
# version 1 spelled some component knobs at the top level: where each one lives now
_MOVED_IN_V2 = {
    "backend": ("generator", "backend"), "compute_type": ("generator", "compute_type"),
    "top_p": ("generator", "top_p"), "max_inflight_groups": ("generator", "max_inflight_groups"),
    "learning_rate": ("learner", "learning_rate"), "use_lora": ("learner", "use_lora"),
    "beta": ("learner", "beta"), "dynamic_sampling": ("learner", "drop_uniform_groups"),
    "frontier": ("frontier", "enabled"),
}


class RunConfig(BaseModel):
    """One YAML for the whole loop. Top level: what the run is, the knobs several components
    share, the services and the CPU budget. `generator`, `learner`, `frontier`, `curriculum` and
    `evaluator` are the components' own configs, every field reachable; the shared knobs are set
    here only."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(RUN_CONFIG_VERSION, description="schema version of this file (1 is migrated on load)")
    name: str = Field("default", pattern=r"^[A-Za-z0-9_-]+$", description="names the run folder, groups and app id")
    runs_dir: Path = Field(REPO_ROOT / "runs", description="parent of the run folder")
    model: str = Field("smollm2", description="'smollm2' (the shipped GGUF), 'tiny' (tests) or a local HF model dir")
    reshaping: str = Field("full", description="reshaping preset name (raw, full) or a YAML path")
    steps: int = Field(4, ge=1, description="learner steps to train (with `max_generated_groups`: derived from it)")
    max_generated_groups: int | None = Field(
        None, ge=1, description="budget of GENERATED groups (x group_size rollouts): the generator stops after "
        "this many, counted across restarts, and the learner trains what it received once all of them are in, "
        "the last step possibly partial. The learner's step cap and the length of its learning-rate schedule "
        "are then ceil(max_generated_groups / groups_per_step); groups that dynamic sampling drops still "
        "count, so every arm costs the same generation. None: `steps` bounds the run")
    # corpus
    seed: int = Field(0, description="sampling and learner seed (and the corpus seed unless corpus_seed is set)")
    corpus_seed: int | None = Field(
        None, description="seed of the corpus build (split and bug sites); None: `seed`. Fixing it apart from "
        "`seed` lets every training seed train on the same tasks and be evaluated on the same held-out sets")
    max_functions: int | None = Field(None, ge=1, description="corpus size cap per source (None: all of MBPP)")
    heldout_patterns: tuple[str, ...] = Field(
        (), description="bug patterns held out of training: only validation functions get them, as the "
        "`heldout_pattern` eval set (CorpusBuildConfig.heldout_patterns); none by default")
    # shared by the generator and the learner
    group_size: int = Field(4, ge=2, description="K: samples per task")
    groups_per_step: int = Field(2, ge=1, description="G: groups per learner step (the generator paces by it)")
    max_new_tokens: int = Field(160, ge=1, description="completion cap of the sampler, and the learner's length")
    temperature: float = Field(1.0, gt=0, description="sampling temperature; the learner's logprobs use the same")
    max_policy_lag: int = Field(2, ge=0, description="versions a rollout may trail the policy (both sides enforce it)")
    # components
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig,
                                       description="the sampler's own knobs (backend, compute_type, top_p, ...)")
    learner: LearnerConfig = Field(default_factory=LearnerConfig,
                                   description="the learner's own knobs (loss, importance sampling, LoRA, optimiser)")
    frontier: FrontierConfig = Field(default_factory=FrontierConfig,
                                     description="learnable-band task selection (producers/generator/frontier.py)")
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig, description="task difficulty schedule")
    evaluator: EvaluatorConfig = Field(
        default_factory=lambda: EvaluatorConfig(repeats=3),
        description="the feedback agent's evaluator (repeats, re-evaluations after environment failures, adversarial "
        "inputs, rename check): feedback is computed before any reshaping, so these are the run's, never a reshaping "
        "config's. Default: 3 repeats, as the full method (the default reshaping) asks; a plain baseline sets 1")
    tensorboard: bool = Field(True, description="also write the metrics topic as TensorBoard event files under "
                              "runs/<name>/tensorboard (`tensorboard --logdir` shows them while the run goes on)")
    heldout: HeldoutConfig = Field(default_factory=HeldoutConfig,
                                   description="held-out success while training: every Nth policy version evaluated "
                                   "on a fixed small set, published as `eval` metrics (off by default)")
    # services
    broker: Literal["own", "shared"] = Field(
        "own", description="own: a broker of this run (data in the run folder, so runs never read each other's "
        "events); shared: the machine's local broker (RESHAPER_KAFKA_PORT)")
    brokers: int = Field(1, ge=1, le=5, description="Kafka nodes: of the run's own broker (1), or its own local "
                         "cluster (3: topics replicated three times, two in sync); with `bootstrap`, the size of that "
                         "cluster, which sets the topics' replication")
    kafka_port: int | None = Field(None, description="port of the run's own broker (its first node); default: derived "
                                   "from the name")
    bootstrap: str | None = Field(None, description="an existing Kafka cluster; overrides `broker`")
    store: str | None = Field(None, description="ClickHouse server URL; default: chDB in the run folder")
    topics: Topics = Field(default_factory=Topics, description="the topic namespace every component of the run "
                           "uses; a prefix keeps runs on one shared broker apart")
    # scaling out: how many of each scalable component (one learner, as designed)
    workers: int = Field(
        1, ge=1, description="Faust worker processes of the run: one app id (one consumer group), each worker its own "
        "data dir, the partitions of rollouts and feedback shared between them. With more than one, every table keeps "
        f"a standby replica on another worker. At most the topics' partition count ({DEFAULT_PARTITIONS}): a worker "
        "beyond it would hold no partition")
    generators: int = Field(
        1, ge=1, description="generator processes of the run: generator i publishes as `<name>-gen-<i>` with its own "
        "seed (the run's for i = 0) and takes every i-th group of the run's budget (pacing bound, "
        "generator.max_inflight_groups, max_generated_groups), so N generators together generate what one would")
    # CPU budget: processes and threads per component (0: the library's default, all cores).
    # One thread each by measurement on 2 cores: 17.9 rollouts/min against 13.4 with both
    # engines on all cores (6 steps, ctranslate2 int8), which oversubscribes the CPUs the
    # sandbox also needs.
    sandbox_workers: int = Field(2, ge=1, description="warm sandbox workers of the feedback agent")
    generator_threads: int = Field(1, ge=0, description="threads of the generation engine; 0: all cores")
    learner_threads: int = Field(1, ge=0, description="torch threads of the learner; 0: all cores")

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # `frontier` was a flag in version 1 and is a section now
        legacy = sorted(k for k in data if k in _MOVED_IN_V2 and not (k == "frontier" and isinstance(data[k], dict)))
        if data.get("version", 1 if legacy else RUN_CONFIG_VERSION) != 1:
            return data
        migrated = {k: v for k, v in data.items() if k not in _MOVED_IN_V2}
        for key in legacy:
            section, name = _MOVED_IN_V2[key]
            sub = dict(migrated.get(section) or {})
            if name in sub:
                raise ValueError(f"{key} is given twice: at the top level (version 1) and as {section}.{name}")
            sub[name] = data[key]
            migrated[section] = sub
        migrated["version"] = RUN_CONFIG_VERSION
        return migrated

    @model_validator(mode="after")
    def _shared_knobs_once(self) -> RunConfig:
        for section, owned in SHARED.items():
            given = sorted(getattr(self, section).model_fields_set & set(owned))
            if given:
                where = ", ".join(f"{section}.{g} (set `{owned[g]}`)" for g in given)
                raise ValueError(f"run-level settings cannot be set in a component: {where}")
        return self

    @model_validator(mode="after")
    def _steps_from_budget(self) -> RunConfig:
        """With a budget of generated groups, `steps` is the budget in whole and partial steps."""
        if self.max_generated_groups is None:
            return self
        derived = -(-self.max_generated_groups // self.groups_per_step)
        if "steps" in self.model_fields_set and self.steps != derived:
            raise ValueError(f"steps {self.steps} disagrees with max_generated_groups {self.max_generated_groups} "
                             f"/ groups_per_step {self.groups_per_step} = {derived} steps: give one")
        self.steps = derived
        return self

    @model_validator(mode="after")
    def _scaling_fits(self) -> RunConfig:
        if self.workers > DEFAULT_PARTITIONS:
            raise ValueError(f"workers {self.workers} exceeds the {DEFAULT_PARTITIONS} partitions of the rollouts and "
                             f"feedback topics: a worker beyond {DEFAULT_PARTITIONS} would hold no partition and "
                             "process nothing; give at most that many")
        # each generator needs at least one group of every budget, or it could never start one
        budgets = {"generator.max_inflight_groups": self.generator.max_inflight_groups,
                   "max_generated_groups": self.max_generated_groups}
        short = [f"{name} {value}" for name, value in budgets.items() if value is not None and value < self.generators]
        if short:
            raise ValueError(f"{', '.join(short)} below generators {self.generators}: each generator takes an equal "
                             "share of these budgets, and a generator with none of it would never generate")
        return self

    @property
    def effective_corpus_seed(self) -> int:
        return self.seed if self.corpus_seed is None else self.corpus_seed

    def corpus_config(self):
        """The corpus this run trains on and is evaluated beside (every place that builds it asks here)."""
        from producers.corpus import CorpusBuildConfig

        return CorpusBuildConfig(seed=self.effective_corpus_seed, max_functions=self.max_functions,
                                 heldout_patterns=self.heldout_patterns)

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name

    def recorded(self) -> dict[str, Any]:
        """The config as run.yaml records it: only the component fields the run does not own,
        so the file loads back as the same config."""
        return self.model_dump(mode="json", exclude={s: set(owned) for s, owned in SHARED.items()})


def load_run_config(path: Path | None, **overrides) -> RunConfig:
    data = yaml.safe_load(Path(path).read_text()) if path else {}
    data = {**(data or {}), **{k: v for k, v in overrides.items() if v is not None}}
    return RunConfig.model_validate(data)


def deep_merge(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``, merging nested dicts key by key (an arm's ``learner: {beta: ..}``
    changes that one knob, not the whole learner section)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
