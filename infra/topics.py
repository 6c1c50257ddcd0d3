"""Every topic of the design, as code: partitions, replication, retention, cleanup policy.

Event topics keep everything (the log is the source of truth: replays and the ClickHouse
history read it from the start); the policy topic is compacted by version key as well as
kept, so a late generator finds every version. Faust's changelog topics are compacted;
Faust creates them itself, and `verify_changelogs` checks them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

KEEP_FOREVER = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
COMPACT = {"cleanup.policy": "compact"}

ADVANTAGES_PREFIX = "advantages."
DEFAULT_PARTITIONS = 4


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int = 1
    config: dict[str, str] = field(default_factory=dict)
    payload: str = ""  # Avro record name of the values


def event_topics(partitions: int = DEFAULT_PARTITIONS, replication: int = 1) -> list[TopicSpec]:
    """The fixed topics. Group-keyed topics share one partition count so a group stays put."""
    return [
        TopicSpec("tasks", partitions, replication, KEEP_FOREVER, "Task"),
        TopicSpec("rollouts", partitions, replication, KEEP_FOREVER, "Rollout"),
        TopicSpec("feedback", partitions, replication, KEEP_FOREVER, "Feedback"),
        # one partition: versions are totally ordered
        TopicSpec("policy", 1, replication, KEEP_FOREVER, "PolicyVersion"),
        TopicSpec("metrics", 1, replication, KEEP_FOREVER, "Metric"),
        TopicSpec("deadletter", 1, replication, KEEP_FOREVER, "DeadLetter"),
    ]


def advantages_topic(config_id: str, partitions: int = DEFAULT_PARTITIONS, replication: int = 1) -> TopicSpec:
    if not config_id or not all(c.isalnum() or c in "-_" for c in config_id):
        raise ValueError(f"invalid reshaping config id {config_id!r} for a topic name")
    return TopicSpec(ADVANTAGES_PREFIX + config_id, partitions, replication, KEEP_FOREVER, "Advantage")


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
    # a topic just created can take a moment to show in the metadata the broker returns
    deadline = time.monotonic() + 15
    problems = verify_topics(admin, specs)
    while problems and all(p.endswith(": missing") for p in problems) and time.monotonic() < deadline:
        time.sleep(0.2)
        problems = verify_topics(admin, specs)
    if problems:
        raise TopicConfigMismatch("; ".join(problems))
    return created


def verify_changelogs(admin: AdminClient, app_id: str) -> list[str]:
    """Faust changelog topics of an app must be compacted; returns the problems."""
    names = [n for n in admin.list_topics(timeout=10).topics if n.startswith(app_id) and n.endswith("-changelog")]
    if not names:
        return []
    return [f"{n}: cleanup.policy={cfg.get('cleanup.policy')}" for n, cfg in _describe(admin, names).items()
            if "compact" not in (cfg.get("cleanup.policy") or "")]
