"""The Faust app of reshaper: one app, two agents, tables backed by changelog topics.

``create_app`` builds an isolated app (its own id, consumer group, tables and data
directory), so the worker, the tests and a replay under a new config never share state.

Choices, briefly:
- values travel as raw bytes in our Avro single-object encoding; agents decode them
  themselves so that a record that does not decode is dead-lettered, not fatal;
- tables are in memory by default and rebuilt from their compacted changelog topics on
  start: the changelog is then the one copy of the state, so what a restarted worker
  recovers is exactly the newest state it delivered. ``store="rocksdb"`` adds a local
  RocksDB copy (``rocksdict``) for tables too large to re-read on every start;
- processing guarantee: at-least-once with deterministic advantage ids (see
  ``streams/agents/reshape.py`` for why nothing is lost and a re-emitted advantage always
  carries the values of its first emission). faust-streaming's ``exactly_once`` (Kafka
  transactions) is an option; it is not the default because it still let duplicates
  through after a SIGKILL in our crash test, and consumers must drop repeated ids anyway.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, Literal

from pydantic import BaseModel, Field, model_validator

from infra.topics import COMPACT, KEEP_FOREVER, TopicSpec, advantages_topic, ensure_topics
from streams.reshaping.config import ReshapingConfig

if TYPE_CHECKING:  # Faust is imported only where an app is built: the replay never needs it
    import faust

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
    store: Literal["rocksdb", "memory"] = Field(
        "memory", description="local table store. memory (the default): the changelog is the only copy, so "
        "a restarted worker recovers exactly the newest delivered state; rocksdb keeps a local copy too "
        "(faster restarts of large tables).")
    commit_interval_s: float = Field(0.5, gt=0, description="how often offsets (and transactions) commit.")
    group_timeout_ms: int = Field(30_000, ge=1, description="log time a group waits for its missing members.")
    late_grace_ms: int = Field(
        2_000, ge=0, description="the timer releases groups only this far behind the wall clock, "
        "so records already produced but not yet consumed can still join their group."
    )
    batch_max_events: int = Field(500, ge=1, description="events the reshape agent takes per batch "
                                  "(one state write per partition and batch).")
    batch_within_s: float = Field(0.05, gt=0, description="how long a batch waits to fill before it is processed.")
    session_timeout_s: float = Field(10.0, gt=0, description="consumer session timeout: how soon the group "
                                     "gives a dead worker's partitions to another (or its own restart).")
    tick_interval_s: float = Field(1.0, gt=0, description="period of the group-timeout timer.")
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
    return specs + changelog_specs(app_id, settings)


def changelog_specs(app_id: str, settings: StreamSettings) -> list[TopicSpec]:
    """The changelog topics of the agents' tables, made with the other topics before the app
    starts. Left to Faust, a table on a fresh broker can look for its new changelog before
    the metadata shows it, and its agent crashes (PartitionsMismatch: 0 partitions). Names
    and settings are Faust's own: <app id>-<table>-changelog, compacted, windowed tables
    kept for their expiry."""
    from streams.agents.feedback import TASKS_TABLE
    from streams.agents.reshape import HOPPING_TABLE, STATE_TABLE, TUMBLING_TABLE

    windowed = {**COMPACT, "retention.ms": str(int(settings.pattern_expires_s * 1000))}
    tables = [(TASKS_TABLE, COMPACT), (STATE_TABLE, COMPACT), (TUMBLING_TABLE, windowed), (HOPPING_TABLE, windowed)]
    return [TopicSpec(f"{app_id}-{name}-changelog", settings.partitions, 1, config) for name, config in tables]


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
    import faust

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
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 3),
        consumer_auto_offset_reset="earliest",
        table_standby_replicas=0,
        web_enabled=False,
    )
    if "feedback" in settings.agents:
        install_feedback(app, settings, evaluate=evaluate, pool=pool)
    if "reshape" in settings.agents:
        install_reshape(app, cfg, settings)
    return app
