"""The Faust app of reshaper: one app, two agents, tables in RocksDB backed by changelogs.

``create_app`` builds an isolated app (its own id, consumer group, tables and data
directory), so the worker, the tests and a replay under a new config never share state.

Choices, briefly:
- values travel as raw bytes in our Avro single-object encoding; agents decode them
  themselves so that a record that does not decode is dead-lettered, not fatal;
- tables live in RocksDB through ``rocksdict`` (faust-streaming's ``rocksdb://`` store
  picks it up when python-rocksdb is absent) and are rebuilt from their compacted
  changelog topics after a crash; ``store="memory"`` keeps them in memory, same changelog;
- processing guarantee: at-least-once by default. faust-streaming's ``exactly_once``
  (Kafka transactions) still let duplicate advantages through after a SIGKILL in
  ``tests/streams/test_crash.py``, so it is an option, not the default. What holds instead:
  every advantage is delivered before the partition state that records it is written, and
  that state carries the last applied feedback offset, so after a crash nothing is lost,
  re-delivered feedback does not move the state twice, and an advantage is re-emitted only
  if the crash fell between its delivery and the state write -- with the same
  deterministic event id (hash of config id and rollout id), for consumers to drop.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Awaitable, Callable, Literal

import faust
from pydantic import BaseModel, Field

from infra.topics import KEEP_FOREVER, TopicSpec, advantages_topic, ensure_topics
from streams.reshaping.config import ReshapingConfig

Evaluate = Callable[[dict, dict, object], Awaitable[dict]]


class StreamSettings(BaseModel):
    """Knobs of the stream processors; the defaults suit one worker on one machine."""

    tasks_topic: str = Field("tasks", description="topic of Task events (key task_id).")
    rollouts_topic: str = Field("rollouts", description="topic of Rollout events (key group_id).")
    feedback_topic: str = Field("feedback", description="topic of Feedback events (key group_id).")
    metrics_topic: str = Field("metrics", description="topic the reshape agent publishes window metrics to.")
    deadletter_topic: str = Field("deadletter", description="topic of records an agent could not decode or use.")
    advantages_prefix: str = Field(
        "advantages.", description="advantage topics are <prefix><config_id>; tests give each run its own prefix."
    )
    partitions: int = Field(4, ge=1, description="partitions of group-keyed topics, tables and changelogs.")
    agents: tuple[Literal["feedback", "reshape"], ...] = Field(
        ("feedback", "reshape"), description="which agents this app runs."
    )
    processing_guarantee: Literal["exactly_once", "at_least_once"] = Field(
        "at_least_once", description="plain commits, outputs deduplicated by deterministic ids (the default: "
        "faust-streaming's exactly_once duplicated outputs in our crash test) or Kafka transactions."
    )
    store: Literal["rocksdb", "memory"] = Field("rocksdb", description="local table store; both use changelogs.")
    commit_interval_s: float = Field(0.5, gt=0, description="how often offsets (and transactions) commit.")
    group_timeout_ms: int = Field(30_000, ge=1, description="log time a group waits for its missing members.")
    late_grace_ms: int = Field(
        2_000, ge=0, description="the timer releases groups only this far behind the wall clock, "
        "so records already produced but not yet consumed can still join their group."
    )
    tick_interval_s: float = Field(1.0, gt=0, description="period of the group-timeout timer.")
    recent_groups: int = Field(4096, ge=1, description="emitted group ids remembered to drop stragglers.")
    metrics_window_ms: int = Field(60_000, ge=1, description="tumbling event-time window of the published metrics.")
    pattern_window_s: float = Field(300.0, gt=0, description="size of the per-pattern tumbling and hopping windows.")
    pattern_hop_s: float = Field(60.0, gt=0, description="step of the per-pattern hopping window.")
    pattern_expires_s: float = Field(3600.0, gt=0, description="how long per-pattern windows are kept.")
    eval_concurrency: int = Field(8, ge=1, description="rollouts evaluated at once (agent concurrency).")
    task_wait_s: float = Field(30.0, ge=0, description="how long a rollout waits for its task to arrive.")
    evaluator: str = Field(
        "streams.feedback.evaluate:aevaluate_rollout", description="import path of the async rollout evaluator."
    )
    pool_factory: str = Field(
        "streams.agents.feedback:default_pool", description="import path of a callable returning the sandbox pool."
    )


def advantages_topic_name(cfg: ReshapingConfig, settings: StreamSettings) -> str:
    return settings.advantages_prefix + cfg.config_id


def ticks_topic_name(app_id: str) -> str:
    return f"{app_id}-ticks"


def app_topic_specs(app_id: str, cfg: ReshapingConfig, settings: StreamSettings) -> list[TopicSpec]:
    """Every topic the app reads or writes, the internal tick topic included."""
    n = settings.partitions
    specs = [TopicSpec(name, n, 1, KEEP_FOREVER) for name in
             (settings.tasks_topic, settings.rollouts_topic, settings.feedback_topic)]
    specs += [TopicSpec(name, 1, 1, KEEP_FOREVER) for name in (settings.metrics_topic, settings.deadletter_topic)]
    specs.append(replace(advantages_topic(cfg.config_id, n), name=advantages_topic_name(cfg, settings)))
    # ticks carry no data; an hour of them is plenty
    specs.append(TopicSpec(ticks_topic_name(app_id), n, 1, {"cleanup.policy": "delete", "retention.ms": "3600000"}))
    return specs


def ensure_app_topics(admin, app_id: str, cfg: ReshapingConfig, settings: StreamSettings) -> None:
    """Create the app's topics if missing (an existing topic must match its spec)."""
    ensure_topics(admin, app_topic_specs(app_id, cfg, settings))


def create_app(app_id: str, cfg: ReshapingConfig, bootstrap: str, data_dir: str | Path,
               settings: StreamSettings | None = None, evaluate: Evaluate | None = None,
               pool: object | None = None) -> faust.App:
    """A Faust app running ``settings.agents`` for reshaping config ``cfg``.

    ``evaluate`` and ``pool`` replace the evaluator and the sandbox pool named in the
    settings (tests hand in their own).
    """
    from streams.agents.feedback import install_feedback
    from streams.agents.reshape import install_reshape

    settings = settings or StreamSettings()
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store="rocksdb://" if settings.store == "rocksdb" else "memory://",
        datadir=str(data_dir),
        processing_guarantee=settings.processing_guarantee,
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        topic_allow_declare=True,  # Faust declares its changelogs; ours exist already (ensure_app_topics)
        key_serializer="raw",
        value_serializer="raw",
        broker_commit_interval=settings.commit_interval_s,
        consumer_auto_offset_reset="earliest",
        table_standby_replicas=0,
        web_enabled=False,
    )
    if "feedback" in settings.agents:
        install_feedback(app, settings, evaluate=evaluate, pool=pool)
    if "reshape" in settings.agents:
        install_reshape(app, cfg, settings)
    return app
