"""Every topic of the design, as code: partitions, replication, retention, cleanup policy.

Event topics keep everything (the log is the source of truth: replays and the ClickHouse
history read it from the start); the policy topic is compacted by version key as well as
kept, so a late generator finds every version. Faust's changelog topics are compacted;
Faust creates them itself, and `verify_changelogs` checks them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from infra.platform.settings import replication_for, topic_replication

KEEP_FOREVER = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
COMPACT = {"cleanup.policy": "compact"}

DEFAULT_PARTITIONS = 4
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
_CONFIG_ID_CHARS = _NAME_CHARS - {"."}  # one topic name segment


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int = 1
    config: dict[str, str] = field(default_factory=dict)
    payload: str = ""  # Avro record name of the values


class Topics(BaseModel):
    """The name of every topic of one namespace: the only place a topic name is spelled.

    ``Topics()`` gives the design's names (``tasks``, ``advantages.<config_id>``, ...);
    ``Topics(prefix="exp1-raw-s0.")`` puts all of a run's topics beside other runs on one
    broker. Every service receives this value in its config.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prefix: str = Field("", description="put before every topic name; empty: the design's names.")

    @field_validator("prefix")
    @classmethod
    def _valid_prefix(cls, prefix: str) -> str:
        if not set(prefix) <= _NAME_CHARS:
            raise ValueError(f"topic prefix {prefix!r} may use only letters, digits, '-', '_' and '.'")
        return prefix

    @property
    def tasks(self) -> str:
        return self.prefix + "tasks"

    @property
    def rollouts(self) -> str:
        return self.prefix + "rollouts"

    @property
    def feedback(self) -> str:
        return self.prefix + "feedback"

    @property
    def policy(self) -> str:
        return self.prefix + "policy"

    @property
    def metrics(self) -> str:
        return self.prefix + "metrics"

    @property
    def deadletter(self) -> str:
        return self.prefix + "deadletter"

    @property
    def reviews(self) -> str:
        return self.prefix + "reviews"

    def advantages(self, config_id: str) -> str:
        """``advantages.<config_id>``: one stream per reshaping config."""
        if not config_id or not set(config_id) <= _CONFIG_ID_CHARS:
            raise ValueError(f"invalid reshaping config id {config_id!r} for a topic name")
        return self.prefix + "advantages." + config_id

    @property
    def advantages_pattern(self) -> str:
        """A subscription regex matching every config's advantage stream of this namespace."""
        return "^" + re.escape(self.prefix + "advantages.") + ".+"

    def payload(self, topic: str) -> str:
        """The Avro record name of a topic's values (``exp.advantages.x`` -> ``Advantage``)."""
        if topic.startswith(self.prefix + "advantages.") and len(topic) > len(self.prefix + "advantages."):
            return "Advantage"
        for spec in self.event_specs():
            if spec.name == topic:
                return spec.payload
        raise ValueError(f"{topic!r} is no topic of the namespace {self.prefix!r}")

    @property
    def subscription(self) -> list[str]:
        """Every topic of the namespace, as a consumer subscribes to them (advantages by regex)."""
        return [spec.name for spec in self.event_specs()] + [self.advantages_pattern]

    def event_specs(self, partitions: int = DEFAULT_PARTITIONS, replication: int | None = None) -> list[TopicSpec]:
        """The fixed topics. Group-keyed topics share one partition count so a group stays put.
        `replication` defaults to what the cluster allows (`topic_replication`)."""
        factor, isr = replication_config(replication)
        config = {**KEEP_FOREVER, **isr}
        return [
            # one partition, as the reviews: each feeds a Faust GlobalTable (every worker holds
            # all of it), which Faust keeps to one partition with several workers (see
            # streams/agents/feedback.py), and a table's source has its changelog's partitions
            TopicSpec(self.tasks, 1, factor, config, "Task"),
            TopicSpec(self.rollouts, partitions, factor, config, "Rollout"),
            TopicSpec(self.feedback, partitions, factor, config, "Feedback"),
            # one partition: versions are totally ordered
            TopicSpec(self.policy, 1, factor, config, "PolicyVersion"),
            TopicSpec(self.metrics, 1, factor, config, "Metric"),
            TopicSpec(self.deadletter, 1, factor, config, "DeadLetter"),
            # people's verdicts, keyed by rollout: one partition, like the tasks
            TopicSpec(self.reviews, 1, factor, config, "Review"),
        ]

    def advantages_spec(self, config_id: str, partitions: int = DEFAULT_PARTITIONS,
                        replication: int | None = None) -> TopicSpec:
        factor, isr = replication_config(replication)
        return TopicSpec(self.advantages(config_id), partitions, factor, {**KEEP_FOREVER, **isr}, "Advantage")


def replication_config(replication: int | None = None) -> tuple[int, dict[str, str]]:
    """A replication factor (default: what the cluster allows, `topic_replication`) and the
    topic config it needs: on a replicated topic, a write that all in-sync replicas
    acknowledged must be on at least `min.insync.replicas` of them."""
    if replication is None:
        factor, min_isr = topic_replication()
    else:
        factor, min_isr = replication, replication_for(replication)[1]
    return factor, ({"min.insync.replicas": str(min_isr)} if factor > 1 else {})


class TopicConfigMismatch(RuntimeError):
    """An existing topic differs from its spec (partitions or config)."""


def _describe(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, n) for n in names])
    return {res.name: {k: v.value for k, v in fut.result().items()} for res, fut in futures.items()}


def verify_topics(admin: AdminClient, specs: list[TopicSpec]) -> list[str]:
    """Differences between the broker's topics and their specs; empty when all match."""
    metadata = admin.list_topics(timeout=10).topics
    problems: list[str] = []
    present = [s for s in specs if s.name in metadata]
    for spec in specs:
        if spec.name not in metadata:
            problems.append(f"{spec.name}: missing")
        elif len(metadata[spec.name].partitions) != spec.partitions:
            problems.append(f"{spec.name}: {len(metadata[spec.name].partitions)} partitions, spec says {spec.partitions}")
    if present:
        actual = _describe(admin, [s.name for s in present])
        for spec in present:
            for key, want in spec.config.items():
                got = actual[spec.name].get(key)
                if got != want:
                    problems.append(f"{spec.name}: {key}={got}, spec says {want}")
    return problems


def ensure_topics(admin: AdminClient, specs: list[TopicSpec]) -> list[str]:
    """Create missing topics, then verify all; raise TopicConfigMismatch on any difference."""
    existing = admin.list_topics(timeout=10).topics
    new = [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor, config=s.config)
           for s in specs if s.name not in existing]
    created = []
    for name, fut in (admin.create_topics(new, operation_timeout=30) if new else {}).items():
        try:
            fut.result()
            created.append(name)
        except Exception as exc:  # a concurrent creator won the race: verification decides
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    problems = _settled_problems(admin, specs, deadline=time.monotonic() + 15)
    if problems:
        raise TopicConfigMismatch("; ".join(problems) + " (topics an older version made differ: on a local broker "
                                  "`reshaper infra reset` empties it)")
    return created


def _settled_problems(admin: AdminClient, specs: list[TopicSpec], deadline: float) -> list[str]:
    """`verify_topics` once the topics just created are known: a topic can take a moment to
    show in the metadata a broker returns, and on a cluster the broker asked for its config
    may not know yet a topic another broker has just created (UNKNOWN_TOPIC_OR_PART)."""
    while True:
        try:
            problems = verify_topics(admin, specs)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        if problems and all(p.endswith(": missing") for p in problems) and time.monotonic() < deadline:
            time.sleep(0.2)
            continue
        return problems


def verify_changelogs(admin: AdminClient, app_id: str) -> list[str]:
    """Faust changelog topics of an app must be compacted; returns the problems."""
    names = [n for n in admin.list_topics(timeout=10).topics if n.startswith(app_id) and n.endswith("-changelog")]
    if not names:
        return []
    return [f"{n}: cleanup.policy={cfg.get('cleanup.policy')}" for n, cfg in _describe(admin, names).items()
            if "compact" not in (cfg.get("cleanup.policy") or "")]
