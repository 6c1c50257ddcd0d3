"""The typed configuration of `reshaper run`: one YAML for the whole loop. The resolved
config of every component is written into the run folder, so each run records what it used."""

from __future__ import annotations

from pathlib import Path

import yaml
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from infra.settings import REPO_ROOT

RUN_CONFIG_VERSION = 1


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(RUN_CONFIG_VERSION, description="schema version of this file")
    name: str = Field("default", pattern=r"^[A-Za-z0-9_-]+$", description="names the run folder, groups and app id")
    runs_dir: Path = Field(REPO_ROOT / "runs", description="parent of the run folder")
    model: str = Field("smollm2", description="'smollm2' (the shipped GGUF), 'tiny' (tests) or a local HF model dir")
    reshaping: str = Field("full", description="reshaping preset name (raw, full) or a YAML path")
    steps: int = Field(4, ge=1, description="learner steps to train")
    # corpus
    seed: int = Field(0, description="corpus and sampling seed")
    max_functions: int | None = Field(None, ge=1, description="corpus size cap per source (None: all of MBPP)")
    # generator
    backend: Literal["ctranslate2", "transformers", "vllm"] = Field(
        "ctranslate2", description="generation engine: ctranslate2 (CPU default), transformers (reference), vllm (GPU)")
    compute_type: Literal["int8", "float32"] = Field(
        "int8", description="precision of the ctranslate2 engine (int8: faster, logprobs off by ~0.36 nats/token)")
    group_size: int = Field(4, ge=2, description="K: samples per task")
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(160, ge=1)
    max_policy_lag: int = Field(2, ge=0)
    max_inflight_groups: int = Field(8, ge=1)
    frontier: bool = Field(False, description="draw mostly tasks whose measured pass rate is strictly between 0 "
                           "and 1 (producers/generator/frontier.py)")
    # learner
    groups_per_step: int = Field(2, ge=1)
    learning_rate: float = Field(1e-5, gt=0)
    use_lora: bool = True
    beta: float = Field(0.0, ge=0, description="KL to the reference; 0 skips the reference pass")
    dynamic_sampling: bool = Field(
        False, description="DAPO dynamic sampling: groups with equal advantages are not trained on, the "
        "generator samples replacements (learner.drop_uniform_groups)")
    # services
    broker: Literal["own", "shared"] = Field(
        "own", description="own: a broker of this run (data in the run folder, so runs never read each other's "
        "events); shared: the machine's local broker (RESHAPER_KAFKA_PORT)")
    kafka_port: int | None = Field(None, description="port of the run's own broker; default: derived from the name")
    bootstrap: str | None = Field(None, description="an existing Kafka cluster; overrides `broker`")
    store: str | None = Field(None, description="ClickHouse server URL; default: chDB in the run folder")
    sandbox_workers: int = Field(2, ge=1)
    # CPU budget: threads per component (0: the library's default, all cores). One each by
    # measurement on 2 cores: 17.9 rollouts/min against 13.4 with both engines on all cores
    # (6 steps, ctranslate2 int8), which oversubscribes the CPUs the sandbox also needs.
    generator_threads: int = Field(1, ge=0, description="threads of the generation engine; 0: all cores")
    learner_threads: int = Field(1, ge=0, description="torch threads of the learner; 0: all cores")

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name


def load_run_config(path: Path | None, **overrides) -> RunConfig:
    data = yaml.safe_load(Path(path).read_text()) if path else {}
    data = {**(data or {}), **{k: v for k, v in overrides.items() if v is not None}}
    return RunConfig.model_validate(data)
