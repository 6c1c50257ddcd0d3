"""Dead-letter records for the agents, the same shape ``infra.platform.kafka_io`` writes."""

from __future__ import annotations

from infra.platform.kafka_io import dead_letter_record
from schemas.codec import CODEC, new_event_fields


def dead_letter_value(topic: str, partition: int, offset: int, consumer: str,
                      key: bytes | None, value: bytes | None, exc: Exception) -> bytes:
    record = dead_letter_record(topic, partition, offset, consumer, key, value, exc)
    return CODEC.encode("DeadLetter", {**new_event_fields(), **record})
