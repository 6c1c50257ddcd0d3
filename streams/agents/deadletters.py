"""Dead-letter records for the agents, the same shape ``infra.kafka_io`` writes."""

from __future__ import annotations

from typing import Any

from schemas.codec import CODEC, new_event_fields


def dead_letter_value(topic: str, partition: int, offset: int, consumer: str,
                      key: bytes | None, value: bytes | None, exc: Exception) -> bytes:
    record: dict[str, Any] = {
        **new_event_fields(),
        "source_topic": topic, "source_partition": partition, "source_offset": offset,
        "consumer": consumer, "key": key, "value": value,
        "error_type": type(exc).__name__, "error_message": str(exc)[:2000],
    }
    return CODEC.encode("DeadLetter", record)
