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

from pathlib import Path
from typing import TYPE_CHECKING

from infra.platform.topics import COMPACT, TopicSpec, ensure_topics, replication_config
from streams.agents.feedback import REVIEWED_TABLE, TASKS_TABLE, install_feedback
from streams.agents.liveness import install_liveness
from streams.agents.reshape import HOPPING_TABLE, STATE_TABLE, TUMBLING_TABLE, install_reshape
from streams.reshaping.config import ReshapingConfig
from streams.settings import Evaluate, StreamSettings, ticks_topic_name
from streams.transport import use_at_least_once_transport

if TYPE_CHECKING:  # Faust is imported only where an app is built: the replay never needs it
    import faust


def app_topic_specs(app_id: str, cfg: ReshapingConfig, settings: StreamSettings) -> list[TopicSpec]:
    """Every topic the app reads or writes, the internal tick topic included."""
    n, topics = settings.partitions, settings.topics
    read_or_written = {topics.tasks, topics.rollouts, topics.feedback, topics.metrics, topics.deadletter,
                       topics.reviews}
    specs = [spec for spec in topics.event_specs(n) if spec.name in read_or_written]
    specs.append(topics.advantages_spec(cfg.config_id, n))
    # ticks carry no data; an hour of them is plenty
    factor, isr = replication_config()
    specs.append(TopicSpec(ticks_topic_name(app_id), n, factor,
                           {"cleanup.policy": "delete", "retention.ms": "3600000", **isr}))
    return specs + changelog_specs(app_id, settings)


def changelog_specs(app_id: str, settings: StreamSettings) -> list[TopicSpec]:
    """The changelog topics of the agents' tables, made with the other topics before the app
    starts. Left to Faust, a table on a fresh broker can look for its new changelog before
    the metadata shows it, and its agent crashes (PartitionsMismatch: 0 partitions). Names
    and settings are Faust's own: <app id>-<table>-changelog, compacted, windowed tables
    kept for their expiry."""
    windowed = {**COMPACT, "retention.ms": str(int(settings.pattern_expires_s * 1000))}
    tables = [(TASKS_TABLE, COMPACT, 1), (REVIEWED_TABLE, COMPACT, 1), (STATE_TABLE, COMPACT, settings.partitions),
              (TUMBLING_TABLE, windowed, settings.partitions), (HOPPING_TABLE, windowed, settings.partitions)]
    factor, isr = replication_config()
    return [TopicSpec(f"{app_id}-{name}-changelog", partitions, factor, {**config, **isr})
            for name, config, partitions in tables]


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

    settings = settings or StreamSettings()
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store="rocksdb://" if settings.store == "rocksdb" else "memory://",
        datadir=str(data_dir),
        processing_guarantee=settings.processing_guarantee,
        topic_partitions=settings.partitions,
        topic_replication_factor=replication_config()[0],  # the cluster's: 1 on the embedded broker
        topic_allow_declare=True,  # Faust declares its changelogs; ours exist already (ensure_app_topics)
        key_serializer="raw",
        value_serializer="raw",
        broker_commit_interval=settings.commit_interval_s,
        broker_commit_livelock_soft_timeout=settings.commit_livelock_timeout_s,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 3),
        consumer_auto_offset_reset="earliest",
        table_standby_replicas=settings.standby_replicas,
        web_enabled=False,
    )
    use_at_least_once_transport(app)  # a record skipped or thrown away in a rebalance is read again, not committed
    if "feedback" in settings.agents:
        install_feedback(app, settings, evaluate=evaluate, pool=pool)
    if "reshape" in settings.agents:
        install_reshape(app, cfg, settings)
    sources = {"feedback": settings.topics.rollouts, "reshape": settings.topics.feedback}
    install_liveness(app, bootstrap, [sources[agent] for agent in settings.agents], settings.stall_timeout_s,
                     settings.stall_check_s)
    return app
