"""The emit step of reshaping, shared by the reshape agent and the replay: what a
``PartitionReshaper`` step produced, as the records to send. One function, so a live
stream and a replay of it write the same bytes to the same topics."""

from __future__ import annotations

from dataclasses import dataclass

from infra.platform.topics import Topics
from schemas.codec import CODEC
from streams.agents.deadletters import dead_letter_value
from streams.agents.processor import Output


@dataclass(frozen=True)
class Outgoing:
    topic: str
    key: bytes
    value: bytes


def encoded_output(out: Output, topics: Topics, config_id: str, consumer: str,
                   source: str | None = None) -> list[Outgoing]:
    """Dead letters for the rejected feedback, then the advantages (keyed by group, so a group
    stays on one partition), then the closed metrics windows, all in ``topics``. ``source``:
    the feedback topic read (default: the one of ``topics``)."""
    source = source or topics.feedback
    records = [Outgoing(topics.deadletter, source.encode(), dead_letter_value(
        source, -1, -1, consumer, str(fb.get("group_id", "")).encode(), None, exc))
        for fb, exc in out.rejected]
    advantages = topics.advantages(config_id)
    records += [Outgoing(advantages, rec["group_id"].encode(), CODEC.encode("Advantage", rec))
                for rec in out.advantages]
    records += [Outgoing(topics.metrics, b"reshape", CODEC.encode("Metric", metric)) for metric in out.metrics]
    return records


def undecodable(topics: Topics, partition: int, offset: int, consumer: str, key: bytes | None,
                value: bytes | None, exc: Exception, source: str | None = None) -> Outgoing:
    """The dead letter of a feedback record that did not decode."""
    source = source or topics.feedback
    return Outgoing(topics.deadletter, source.encode(),
                    dead_letter_value(source, partition, offset, consumer, key, value, exc))
