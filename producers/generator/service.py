"""The generator as a streaming service: tasks in, GRPO groups of rollouts out.

One loop, one thread:

1. read what arrived: tasks and success rates (scheduler.TaskFeed), policy versions and
   scored group ids (LearnerFeed);
2. between batches, switch to the newest policy version (`backend.load_policy`);
3. admit as many new groups as pacing, back-pressure and `max_groups` allow; when none,
   wait (polling) and report why;
4. pick tasks with the curriculum, sample K completions each, publish them to `rollouts`
   keyed by group id (a group stays on one partition), flush, report metrics.

Admission (`admission`) is pure, so its rules are tested without Kafka.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from infra.platform.kafka_io import DeliveryError, EventProducer
from infra.platform.topics import Topics
from learner.config import DROPPED_METRIC, DROPPED_SOURCE
from producers.generator.backends.base import GenerationBackend, Sample, SamplingParams
from producers.generator.config import GeneratorConfig
from producers.generator.frontier import (FrontierConfig, TaskRates, band_sizes_by_pattern, frontier_band,
                                          pick_frontier, unmeasured)
from producers.generator.share import GroupShare
from schemas.prompt import PROMPT_TEMPLATE_VERSION, render_task_prompt
from producers.generator.scheduler import Curriculum, CurriculumConfig, FollowedFeed, TaskFeed, TopicFollower

log = logging.getLogger(__name__)

WaitReason = Literal["", "no_tasks", "pacing", "backpressure", "max_groups"]


class GenerateRunConfig(BaseModel):
    """A generator run: the sampler's knobs plus where it reads, writes and when it stops."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generator: GeneratorConfig = Field(default_factory=GeneratorConfig, description="Model, sampling and limits.")
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig, description="Task difficulty schedule.")
    frontier: FrontierConfig = Field(
        default_factory=FrontierConfig, description="Draw from tasks whose measured pass rate is in a band.")
    config_id: str = Field("default", description="Reshaping config whose advantages count a group as scored.")
    groups_per_step: int = Field(
        8,
        ge=1,
        description="G: groups the learner turns into one policy version (the whole run's: with several "
        "generators, `share` says which part of the pacing bound is this one's).",
    )
    groups_per_batch: int = Field(
        2,
        ge=1,
        description="Groups sampled per backend call; policy swaps happen between batches, so smaller is fresher.",
    )
    max_groups: int | None = Field(None, ge=1, description="Stop after this many groups of the run (this "
                                   "generator makes its `share` of them); None runs until stopped.")
    share: GroupShare = Field(
        default_factory=GroupShare, description="Which part of the run's group budget is this generator's when "
        "several feed one learner: its part of the pacing bound, of `generator.max_inflight_groups` and of "
        "`max_groups` (producers/generator/share.py). Default: one generator, the whole budget.")
    generator_id: str = Field("", description="Name carried by every rollout; empty means <hostname>-<pid>.")
    topics: Topics = Field(default_factory=Topics, description="The topic namespace: tasks are read from "
                           "the start, rollouts published, policy versions and scored groups followed.")
    poll_interval_s: float = Field(0.5, gt=0, description="How long one wait polls the topics before re-checking.")
    idle_timeout_s: float | None = Field(
        None, gt=0, description="Stop after waiting this long without admitting a group; None waits forever."
    )
    startup_timeout_s: float = Field(
        30.0, gt=0, description="How long to read the existing log (tasks, policy, scores) before the first batch."
    )

    @property
    def scored_topic(self) -> str:
        return self.topics.advantages(self.config_id)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "GenerateRunConfig":
        data = yaml.safe_load(Path(path).read_text()) or {}
        return cls.model_validate(data)


@dataclass(frozen=True)
class Admission:
    groups: int  # how many groups may be started now (0: wait)
    reason: WaitReason  # the binding limit when groups == 0
    pacing_bound: int  # total groups allowed by the newest policy version


def admission(
    produced: int,
    inflight: int,
    latest_version: int,
    *,
    groups_per_step: int,
    max_policy_lag: int,
    max_inflight_groups: int,
    groups_per_batch: int,
    max_groups: int | None = None,
    dropped_groups: int = 0,
    share: GroupShare = GroupShare(),
) -> Admission:
    """How many new groups may be started.

    Pacing: the learner turns G groups into one version, so the n-th group (0-based,
    counting every group produced) is trained at about version n // G. Sampled at
    version v, it is n // G - v versions stale when trained; keeping that <= max_policy_lag
    means n < G * (v + max_policy_lag + 1). Beyond that bound the samples would be too
    stale to train on, so the generator waits for a newer version instead.

    `produced` counts the groups of this generator id, so several generators feeding one
    learner each take their `share` of every limit below (the pacing bound, the in-flight cap
    and `max_groups`, all counted for the run): together they admit what one generator
    would. A restarted generator goes on from the count it last reported on `metrics`.

    Dropped groups: a group the learner does not train on -- no comparison signal under
    dynamic sampling, or every record excluded by the reshaping (environment failures, too
    few comparable members) -- does not fill its steps, so each of the `dropped_groups` it
    reported moves the bound up by one: the generator samples a replacement at once, and
    the learner's steps stay full instead of waiting for groups pacing would never allow.

    Back-pressure: at most `max_inflight_groups` groups generated but not yet scored.
    """
    pacing_bound = share.part(groups_per_step * (latest_version + max_policy_lag + 1) + dropped_groups)
    room: dict[WaitReason, int] = {}
    if max_groups is not None:  # first: when the run is done, that is the reason, not a wait
        room["max_groups"] = share.part(max_groups) - produced
    room["pacing"] = pacing_bound - produced
    room["backpressure"] = share.part(max_inflight_groups) - inflight
    binding = min(room, key=room.get)  # the tightest limit; ties go to the earlier entry
    groups = max(0, min(groups_per_batch, room[binding]))
    return Admission(groups, binding if groups == 0 else "", pacing_bound)


def rollout_records(
    *,
    task_id: str,
    group_id: str,
    prompt_token_ids: list[int],
    samples: list[Sample],
    params: SamplingParams,
    policy_version: int,
    generator_id: str,
) -> list[dict[str, Any]]:
    """The Rollout records of one group (envelope fields are added by the producer)."""
    return [
        {
            "rollout_id": f"{group_id}-{i}",
            "group_id": group_id,
            "task_id": task_id,
            "sample_index": i,
            "group_size": len(samples),
            "policy_version": policy_version,
            "generator_id": generator_id,
            "prompt_template_version": PROMPT_TEMPLATE_VERSION,
            "prompt_token_ids": list(prompt_token_ids),
            "completion_token_ids": list(sample.token_ids),
            "behaviour_logprobs": list(sample.logprobs),
            "completion_text": sample.text,
            "finish_reason": sample.finish_reason,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": params.top_k,
            "max_new_tokens": params.max_new_tokens,
            "sampling_seed": params.seed if params.seed is not None else 0,
        }
        for i, sample in enumerate(samples)
    ]


class LearnerFeed(FollowedFeed):
    """What the learner side says back: the newest policy version and the scored group ids."""

    def __init__(self, topics: Topics, config_id: str, bootstrap: str | None = None, rate_window: int = 16,
                 generator_id: str = ""):
        self.policy_topic, self.scored_topic, self.config_id = topics.policy, topics.advantages(config_id), config_id
        self.generator_id = generator_id
        self.metrics_topic = topics.metrics
        self.follower = TopicFollower([self.policy_topic, self.scored_topic, self.metrics_topic], bootstrap,
                                      name="generator-learner")
        self.latest_version = 0
        self.latest_location: str | None = None
        self.scored_groups: set[str] = set()
        self.dropped_groups = 0  # groups the learner's dynamic sampling left out (its latest count)
        self.task_rates = TaskRates(rate_window)  # per-task pass rates of the scored samples
        self.logged_groups = 0  # groups this generator id reported on metrics (an earlier process's too)

    def apply(self, topic: str, payload: str, record: dict[str, Any]) -> None:
        if topic == self.policy_topic and payload == "PolicyVersion":
            # A learner of another reshaping config shares the topic; its policies are not ours.
            if record.get("config_id", "") not in ("", self.config_id):
                return
            if record["version"] > self.latest_version:
                self.latest_version, self.latest_location = int(record["version"]), record["location"]
        elif topic == self.scored_topic and payload == "Advantage":
            # an excluded record still says its group was scored: it is no longer in flight
            self.scored_groups.add(record["group_id"])
            if not record.get("excluded", False):  # an environment failure is not the task's outcome
                self.task_rates.add(record["rollout_id"], record["task_id"], record["reward_raw"] >= 1.0)
        elif (topic == self.metrics_topic and payload == "Metric" and record["source"] == DROPPED_SOURCE
              and record.get("config_id", "") == self.config_id):
            self.dropped_groups = max(self.dropped_groups, int(record["values"].get(DROPPED_METRIC, 0)))
        elif (topic == self.metrics_topic and payload == "Metric" and record["source"] == "generator"
              and self.generator_id and record.get("labels", {}).get("generator_id") == self.generator_id):
            self.logged_groups = max(self.logged_groups, int(record["values"].get("groups", 0)))

    def caught_up(self) -> bool:
        return self.follower.caught_up()

    def close(self) -> None:
        self.follower.close()


@dataclass
class RunState:
    """Counters of a run, also what the progress bar and the metrics show."""

    groups: int = 0
    rollouts: int = 0
    tokens: int = 0
    batches: int = 0
    generate_s: float = 0.0
    idle_s: float = 0.0
    swap_s: float = 0.0  # spent loading new policy versions (a backend that loads lazily counts it in generating)
    inflight: int = 0
    policy_version: int = 0
    latest_version: int = 0
    waiting: WaitReason = ""
    stopped: str = ""  # why run() returned: max_groups | idle | stopped

    @property
    def lag(self) -> int:
        return self.latest_version - self.policy_version


class GeneratorService:
    """Turns the task stream into rollout groups under the pacing and back-pressure rules."""

    def __init__(
        self,
        cfg: GenerateRunConfig,
        backend: GenerationBackend,
        *,
        tokenizer=None,
        bootstrap: str | None = None,
        producer: EventProducer | None = None,
    ):
        self.cfg = cfg
        self.backend = backend
        self.tokenizer = tokenizer or getattr(backend, "tokenizer", None) or _load_tokenizer(cfg.generator.model_dir)
        self.generator_id = cfg.generator_id or f"{socket.gethostname()}-{os.getpid()}"
        self.producer = producer or EventProducer(bootstrap)
        self.tasks = TaskFeed(cfg.topics, bootstrap)
        self.learner = LearnerFeed(cfg.topics, cfg.config_id, bootstrap, cfg.frontier.window,
                                   generator_id=cfg.generator_id)
        self.curriculum = Curriculum(cfg.curriculum)
        self.rng = random.Random(cfg.generator.seed)  # task picks: a run with the same log repeats
        self.params = cfg.generator.sampling_params()
        self.state = RunState(policy_version=backend.policy_version)
        self.produced_groups: set[str] = set()
        self._caught_up = False
        self._wait_started: float | None = None

    # ---- reading ---------------------------------------------------------------------------

    def poll(self, timeout_s: float = 0.0) -> None:
        """Read both feeds, sharing `timeout_s` between them."""
        self.tasks.poll(timeout_s / 2)
        self.learner.poll(timeout_s / 2)
        self.state.latest_version = max(self.learner.latest_version, self.backend.policy_version)
        self.state.inflight = len(self.produced_groups - self.learner.scored_groups)

    def catch_up(self) -> None:
        """Read everything already in the log (tasks, versions, scores) before the first batch,
        so the first samples come from the newest policy and see the whole task pool."""
        deadline = time.monotonic() + self.cfg.startup_timeout_s
        while not (self.tasks.caught_up() and self.learner.caught_up()):
            if time.monotonic() >= deadline:
                log.warning("not caught up with the log after %.0fs; starting anyway", self.cfg.startup_timeout_s)
                break
            self.poll(self.cfg.poll_interval_s)
        # A restarted generator of a named run goes on counting where it stopped, so `max_groups`
        # caps the run, not each process. The count is the last one it put on `metrics` (sent
        # after each batch's rollouts): a crash between the two makes at most one batch more.
        self.state.groups = max(self.state.groups, self.learner.logged_groups)
        self._caught_up = True

    def swap_policy(self) -> None:
        """Load the newest announced version; called only between batches."""
        if self.learner.latest_version > self.backend.policy_version and self.learner.latest_location:
            started = time.monotonic()
            self.backend.load_policy(self.learner.latest_version, self.learner.latest_location)
            self.state.swap_s += time.monotonic() - started
        self.state.policy_version = self.backend.policy_version

    # ---- deciding --------------------------------------------------------------------------

    def admission(self) -> Admission:
        g = self.cfg.generator
        decision = admission(
            self.state.groups,
            self.state.inflight,
            self.state.latest_version,
            groups_per_step=self.cfg.groups_per_step,
            max_policy_lag=g.max_policy_lag,
            max_inflight_groups=g.max_inflight_groups,
            groups_per_batch=self.cfg.groups_per_batch,
            max_groups=self.cfg.max_groups,
            dropped_groups=self.learner.dropped_groups,
            share=self.cfg.share,
        )
        if decision.groups and not self.tasks.tasks_by_id:
            return Admission(0, "no_tasks", decision.pacing_bound)
        return decision

    # ---- producing -------------------------------------------------------------------------

    def pick_task(self) -> dict:
        def curriculum_pick() -> dict:
            return self.curriculum.pick(self.tasks.tasks_by_id, self.tasks.success_rates, self.rng)

        if not self.cfg.frontier.enabled:
            return curriculum_pick()
        return pick_frontier(self.tasks.tasks_by_id, self.learner.task_rates, self.cfg.frontier, self.rng,
                             curriculum_pick)

    def generate_batch(self, n_groups: int) -> None:
        """Sample and publish `n_groups` groups; raises DeliveryError if the broker refused them."""
        g = self.cfg.generator
        tasks = [self.pick_task() for _ in range(n_groups)]
        prompts = [render_task_prompt(self.tokenizer, t, g.include_error_context, g.max_error_chars) for t in tasks]
        # A fresh seed per batch: the same seed on the same prompts would repeat the samples.
        params = self.params.model_copy(update={"seed": g.seed + self.state.batches})
        started = time.monotonic()
        groups = self.backend.generate(prompts, params)
        seconds = time.monotonic() - started

        group_ids = [uuid.uuid4().hex for _ in tasks]
        tokens = 0
        for task, prompt, samples, group_id in zip(tasks, prompts, groups, group_ids):
            records = rollout_records(
                task_id=task["task_id"],
                group_id=group_id,
                prompt_token_ids=prompt,
                samples=samples,
                params=params,
                policy_version=self.backend.policy_version,
                generator_id=self.generator_id,
            )
            for record in records:
                self.producer.send(self.cfg.topics.rollouts, group_id, "Rollout", record)
            tokens += sum(len(s.token_ids) for s in samples)
        try:
            self.producer.flush()
        except DeliveryError as exc:
            raise DeliveryError(
                f"rollouts of {len(group_ids)} groups to {self.cfg.topics.rollouts!r} were not acknowledged "
                f"after the producer's retries: {exc}"
            ) from exc

        s = self.state
        s.groups += len(group_ids)
        s.rollouts += sum(len(samples) for samples in groups)
        s.tokens += tokens
        s.batches += 1
        s.generate_s += seconds
        self.produced_groups.update(group_ids)
        s.inflight = len(self.produced_groups - self.learner.scored_groups)
        self.publish_metrics(tokens_per_s=tokens / seconds if seconds > 0 else 0.0)

    def publish_metrics(self, tokens_per_s: float | None = None) -> None:
        s = self.state
        overall = s.tokens / s.generate_s if s.generate_s > 0 else 0.0
        values = {
            "groups": float(s.groups),
            "rollouts": float(s.rollouts),
            "tokens": float(s.tokens),
            "tokens_per_s": float(overall if tokens_per_s is None else tokens_per_s),
            "idle_s": s.idle_s,
            "swap_s": s.swap_s,
            "policy_version": float(s.policy_version),
            "latest_policy_version": float(s.latest_version),
            "lag": float(s.lag),
            "inflight_groups": float(s.inflight),
        }
        if self.cfg.frontier.enabled:
            band = frontier_band(self.tasks.tasks_by_id, self.learner.task_rates, self.cfg.frontier)
            values["frontier/band"] = float(len(band))
            values["frontier/unmeasured"] = float(len(unmeasured(self.tasks.tasks_by_id, self.learner.task_rates,
                                                                 self.cfg.frontier)))
            values.update({f"frontier/band/{p}": float(n) for p, n in band_sizes_by_pattern(band).items()})
        self.producer.send(
            self.cfg.topics.metrics,
            "generator",
            "Metric",
            {
                "source": "generator",
                "step": s.groups,
                "config_id": self.cfg.config_id,
                "values": values,
                "labels": {"generator_id": self.generator_id, "waiting": s.waiting},
            },
        )

    # ---- the loop --------------------------------------------------------------------------

    def wait(self, reason: WaitReason) -> bool:
        """One wait: poll the topics for a while. True when the idle timeout has run out."""
        now = time.monotonic()
        if self._wait_started is None or self.state.waiting != reason:
            self._wait_started = now
            self.state.waiting = reason
            self.publish_metrics()  # say at once why nothing is being produced
        self.poll(self.cfg.poll_interval_s)
        self.state.idle_s += time.monotonic() - now
        limit = self.cfg.idle_timeout_s
        return limit is not None and time.monotonic() - self._wait_started >= limit

    def step(self) -> bool:
        """One batch or one wait; False when the run is over."""
        if not self._caught_up:
            self.catch_up()
        self.poll(0.0)
        self.swap_policy()
        decision = self.admission()
        if decision.reason == "max_groups":
            self.state.stopped = "max_groups"
            return False
        if decision.groups == 0:
            if self.wait(decision.reason):
                self.state.stopped = "idle"
                self.publish_metrics()
                return False
            return True
        self._wait_started, self.state.waiting = None, ""
        self.generate_batch(decision.groups)
        return True

    def run(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        on_progress: Callable[[RunState], None] | None = None,
    ) -> RunState:
        """Produce until `max_groups`, the idle timeout, or `should_stop()`; returns the counters."""
        self.state.stopped = ""
        self._wait_started = None  # an earlier run's wait does not count against this one
        try:
            while self.step():
                if on_progress is not None:
                    on_progress(self.state)
                if should_stop():
                    self.state.stopped = "stopped"
                    break
        finally:
            self.producer.flush()
        if on_progress is not None:
            on_progress(self.state)
        return self.state

    def close(self) -> None:
        try:
            self.producer.flush()
        finally:
            self.tasks.close()
            self.learner.close()


def _load_tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)
