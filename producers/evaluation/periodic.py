"""Held-out success while training: every Nth policy version evaluated on a fixed small set.

`reshaper heldout --config heldout.yaml` follows the policy topic; for each announced version
of its reshaping config that is a multiple of `every`, it makes the greedy repair of every task
of a fixed set (the run's validation functions, never trained on), scores it in the sandbox as
`reshaper eval` does, writes the report to `<out_dir>/v-<version>.json` and publishes an `eval`
Metric (step and labels.policy_version = the version, values.success_at_1, config_id = the
run's), which the drift query `proxy_vs_heldout` sets beside the reward being optimised.
A version whose report exists is not evaluated again, so a restarted evaluator goes on.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from infra.platform.topics import Topics

log = logging.getLogger(__name__)


class HeldoutConfig(BaseModel):
    """The run config's `heldout:` section: held-out success while training."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="evaluate policy versions while the run trains (costs generation "
                          "and sandbox time beside the loop's: off on a small CPU machine)")
    every: int = Field(5, ge=1, description="evaluate every policy version that is a multiple of this")
    eval_set: Literal["validation", "humaneval", "heldout_pattern"] = Field(
        "validation", description="which held-out set of the run's corpus (producers/evaluation/converters.py)")
    max_tasks: int = Field(20, ge=1, description="tasks of the set (spread over functions; the same for every version)")
    max_new_tokens: int | None = Field(None, ge=1, description="completion cap; None: the run's max_new_tokens")
    backend: Literal["transformers", "ctranslate2"] = Field("transformers", description="generation engine")
    compute_type: Literal["float32", "int8"] = Field("float32", description="ctranslate2's precision")
    device: str = Field("auto", description="the transformers engine's device (auto: a GPU when there is one)")
    sandbox_workers: int = Field(1, ge=1, description="sandbox processes of the evaluator")


class HeldoutRunConfig(BaseModel):
    """What `reshaper heldout` runs: which policies, which tasks, where the reports go."""

    model_config = ConfigDict(extra="forbid")

    heldout: HeldoutConfig = Field(default_factory=HeldoutConfig)
    model_dir: Path = Field(..., description="the base model the policies adapt")
    tasks: Path = Field(..., description="the fixed set, bug-set JSONL (producers/evaluation/taskfile.py)")
    max_new_tokens: int = Field(160, ge=1, description="completion cap (the run's, unless heldout sets one)")
    config_id: str = Field(..., description="reshaping config of the policies followed; the metrics carry it")
    seed: int = Field(0, description="generation seed (greedy decoding does not use it)")
    out_dir: Path = Field(..., description="one report per evaluated version: v-<version>.json")
    topics: Topics = Field(default_factory=Topics, description="the namespace: policy followed, metrics written")
    poll_interval_s: float = Field(1.0, gt=0, description="how long one wait polls the policy topic")
    idle_timeout_s: float | None = Field(None, gt=0, description="stop after this long with nothing to evaluate")

    @classmethod
    def from_yaml(cls, path: str | Path) -> HeldoutRunConfig:
        return cls.model_validate(yaml.safe_load(Path(path).read_text()) or {})


def report_path(out_dir: Path, version: int) -> Path:
    return Path(out_dir) / f"v-{version:08d}.json"


def due_versions(announced: Iterable[int], every: int, done: Iterable[int]) -> list[int]:
    """The announced versions that are multiples of `every` and not evaluated yet, oldest first."""
    finished = set(done)
    return sorted(v for v in set(announced) if v > 0 and v % every == 0 and v not in finished)


def evaluated_versions(out_dir: Path) -> set[int]:
    return {int(p.stem.split("-")[1]) for p in Path(out_dir).glob("v-*.json")}


def heldout_curve_csv(out_dir: Path) -> str:
    """Held-out success per evaluated version, from the reports (the run report keeps it)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["policy_version", "tasks", "success_at_1", "mean_pass_fraction"])
    for version in sorted(evaluated_versions(out_dir)):
        overall = json.loads(report_path(out_dir, version).read_text())["overall"]
        writer.writerow([version, overall["tasks"], overall["success_at_1"], overall["mean_pass_fraction"]])
    return buf.getvalue()


class PeriodicEvaluator:
    """Follows the policy topic and evaluates the due versions as they are announced."""

    def __init__(self, cfg: HeldoutRunConfig, bootstrap: str | None = None):
        from producers.evaluation.taskfile import read_eval_tasks
        from producers.generator.scheduler import TopicFollower

        self.cfg = cfg
        self.bootstrap = bootstrap
        self.tasks = read_eval_tasks(cfg.tasks)
        self.follower = TopicFollower([cfg.topics.policy], bootstrap, name="heldout")
        self.locations: dict[int, str] = {}  # version -> policy directory
        self.engine = None
        self.pool = None

    def poll(self, timeout_s: float) -> None:
        for event in self.follower.poll(timeout_s):
            record = event.record
            # a learner of another reshaping config may share the topic: its policies are not ours
            if event.payload == "PolicyVersion" and record.get("config_id", "") in ("", self.cfg.config_id):
                self.locations[int(record["version"])] = record["location"]

    def _generate(self, version: int):
        from producers.evaluation.eval import hf_generate
        from producers.generator.backends import make_backend
        from producers.generator.config import GeneratorConfig

        h = self.cfg.heldout
        if self.engine is None:  # one engine for the whole run; each version is swapped in
            self.engine = make_backend(GeneratorConfig(model_dir=self.cfg.model_dir, backend=h.backend,
                                                       compute_type=h.compute_type, device=h.device))
        self.engine.load_policy(version, self.locations[version])
        return hf_generate(self.engine)

    def evaluate(self, version: int) -> dict:
        """Evaluate one version, write its report and publish its `eval` metric."""
        from producers.evaluation.eval import evaluate_policy, publish_eval_metric
        from streams.sandbox import SandboxConfig, SandboxPool

        h = self.cfg.heldout
        if self.pool is None:
            self.pool = SandboxPool(SandboxConfig(workers=h.sandbox_workers)).__enter__()
        report = evaluate_policy(self.cfg.model_dir, self.tasks, adapter=self.locations[version],
                                 policy_version=version, k=1, greedy_only=True,
                                 max_new_tokens=h.max_new_tokens or self.cfg.max_new_tokens, pool=self.pool,
                                 seed=self.cfg.seed, generate=self._generate(version))
        report.write_json(report_path(self.cfg.out_dir, version))
        return publish_eval_metric(report, self.bootstrap, eval_set=h.eval_set, config_id=self.cfg.config_id,
                                   topics=self.cfg.topics)

    def step(self) -> list[int]:
        """Read what was announced and evaluate what is due; returns the versions evaluated."""
        self.poll(self.cfg.poll_interval_s)
        due = due_versions(self.locations, self.cfg.heldout.every, evaluated_versions(self.cfg.out_dir))
        for version in due:
            self.evaluate(version)
            log.info("held-out success of policy v%d published", version)
        return due

    def run(self, should_stop: Callable[[], bool] = lambda: False) -> list[int]:
        """Evaluate due versions until `should_stop()` or the idle timeout; returns those evaluated."""
        done: list[int] = []
        idle_since = time.monotonic()
        while not should_stop():
            evaluated = self.step()
            done += evaluated
            if evaluated:
                idle_since = time.monotonic()
            elif self.cfg.idle_timeout_s is not None and time.monotonic() - idle_since > self.cfg.idle_timeout_s:
                break
        return done

    def close(self) -> None:
        if self.pool is not None:
            self.pool.__exit__(None, None, None)
            self.pool = None
        self.follower.close()
