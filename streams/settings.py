"""The knobs of the stream processors, in their own module: the agents, the app and the
replay read them, and none of those has to import another for them."""

from __future__ import annotations

from typing import Awaitable, Callable, Literal

from pydantic import BaseModel, Field, model_validator

from infra.platform.topics import Topics
from streams.feedback.config import EvaluatorConfig

# (task, rollout, sandbox pool, evaluator config) -> the feedback record body
Evaluate = Callable[[dict, dict, object, EvaluatorConfig], Awaitable[dict]]


class StreamSettings(BaseModel):
    """Knobs of the stream processors; the defaults suit one worker on one machine."""

    topics: Topics = Field(default_factory=Topics, description="the topic namespace: tasks, rollouts and "
                           "feedback in, advantages.<config_id>, metrics and dead letters out.")
    partitions: int = Field(4, ge=1, description="partitions of group-keyed topics, tables and changelogs.")
    agents: tuple[Literal["feedback", "reshape"], ...] = Field(
        ("feedback", "reshape"), description="which agents this app runs."
    )
    processing_guarantee: Literal["exactly_once", "at_least_once"] = Field(
        "at_least_once", description="plain commits, outputs deduplicated by deterministic ids (the default: "
        "faust-streaming's exactly_once duplicated outputs in our crash test) or Kafka transactions."
    )
    store: Literal["rocksdb", "memory"] = Field(
        "memory", description="local table store. memory (the default): the changelog is the only copy, so "
        "a restarted worker recovers exactly the newest delivered state; rocksdb keeps a local copy too "
        "(faster restarts of large tables).")
    commit_interval_s: float = Field(0.5, gt=0, description="how often offsets (and transactions) commit.")
    commit_livelock_timeout_s: float = Field(
        3600.0, gt=0, description="Faust logs an error when a partition with records left to read has not "
        "committed for this long, counted from worker start while it never committed. A feedback partition "
        "can get its first record long after the worker starts (groups hash onto partitions, and a small run "
        "has few groups), which Faust's 300 s default reports as a stuck worker at the first record.")
    group_timeout_ms: int = Field(30_000, ge=1, description="log time a group waits for its missing members.")
    late_grace_ms: int = Field(
        2_000, ge=0, description="the timer releases groups only this far behind the wall clock, "
        "so records already produced but not yet consumed can still join their group."
    )
    batch_max_events: int = Field(500, ge=1, description="events the reshape agent takes per batch "
                                  "(one state write per partition and batch).")
    batch_within_s: float = Field(0.05, gt=0, description="how long a batch waits to fill before it is processed.")
    standby_replicas: int = Field(
        0, ge=0, description="standby copies of every table kept by other workers of the app (Faust's "
        "table_standby_replicas): with several workers, a partition that moves to another worker is restored "
        "from the standby it already holds instead of from the whole changelog. 0: one worker, nobody to hold one.")
    session_timeout_s: float = Field(10.0, gt=0, description="consumer session timeout: how soon the group "
                                     "gives a dead worker's partitions to another (or its own restart).")
    tick_interval_s: float = Field(1.0, gt=0, description="period of the group-timeout timer.")
    stall_timeout_s: float = Field(
        180.0, gt=0, description="a rollouts or feedback partition of this worker with records left and no "
        "commit for this long is stalled: the worker exits (streams/agents/liveness.py) and is restarted. "
        "Far above the longest evaluation of one rollout.")
    stall_check_s: float = Field(15.0, gt=0, description="how often a worker checks its partitions for a stall.")
    recent_groups: int = Field(4096, ge=1, description="emitted group ids remembered to drop stragglers.")
    metrics_window_ms: int = Field(60_000, ge=1, description="tumbling event-time window of the published metrics.")
    pattern_window_s: float = Field(300.0, gt=0, description="size of the per-pattern tumbling and hopping windows.")
    pattern_hop_s: float = Field(60.0, gt=0, description="step of the per-pattern hopping window "
                                 "(pattern_window_s is a whole number of steps).")
    pattern_expires_s: float = Field(3600.0, gt=0, description="how long per-pattern windows are kept.")
    eval_concurrency: int = Field(8, ge=1, description="rollouts evaluated at once (agent concurrency).")
    task_wait_s: float = Field(30.0, ge=0, description="how long a rollout waits for its task to arrive.")
    evaluator: str = Field(
        "streams.feedback.evaluate:aevaluate_rollout", description="import path of the async rollout evaluator."
    )
    evaluator_config: EvaluatorConfig = Field(
        default_factory=EvaluatorConfig, description="what the evaluator is called with: repeats, re-evaluations "
        "after environment failures, checks (the run config's `evaluator` section).")
    pool_factory: str = Field(
        "streams.agents.feedback:default_pool",
        description="import path of a callable (workers) -> started sandbox pool.",
    )
    sandbox_workers: int | None = Field(None, ge=1, description="warm sandbox workers; None: the sandbox's default.")

    @model_validator(mode="after")
    def _window_is_whole_hops(self) -> "StreamSettings":
        steps = self.pattern_window_s / self.pattern_hop_s
        if abs(steps - round(steps)) > 1e-9:
            raise ValueError("pattern_window_s must be a whole multiple of pattern_hop_s")
        return self

    @model_validator(mode="after")
    def _stall_outlasts_a_task_wait(self) -> "StreamSettings":
        # a rollout waiting for its task holds its partition's commit that long, and is no stall
        if self.stall_timeout_s <= self.task_wait_s:
            raise ValueError(f"stall_timeout_s ({self.stall_timeout_s}) must exceed task_wait_s ({self.task_wait_s})")
        return self


def ticks_topic_name(app_id: str) -> str:
    return f"{app_id}-ticks"
