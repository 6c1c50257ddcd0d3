"""Producer and consumer plumbing on confluent-kafka, speaking the Avro codec.

- `EventProducer`: idempotent (acks=all, ordered per partition), delivery reports
  collected, `flush()` on shutdown raises if any record was not delivered.
- `EventConsumer`: manual commits only after the caller has processed a batch; records
  that cannot be decoded go to the `deadletter` topic and are counted, never raised, and
  never stop the records behind them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from infra.settings import bootstrap_servers
from schemas.codec import CODEC, Codec, DecodeError, new_event_fields

log = logging.getLogger(__name__)
DEAD_LETTER_TOPIC = "deadletter"


def dead_letter_record(topic: str, partition: int, offset: int, consumer: str, key: bytes | None,
                       value: bytes | None, exc: Exception) -> dict[str, Any]:
    """The body of a DeadLetter event (schemas/dead_letter.avsc) for one unusable record."""
    return {"source_topic": topic, "source_partition": partition, "source_offset": offset, "consumer": consumer,
            "key": key, "value": value, "error_type": type(exc).__name__, "error_message": str(exc)[:2000]}


class DeliveryError(RuntimeError):
    """Records the broker did not acknowledge after the client's own retries."""


def producer_config(bootstrap: str | None = None, **overrides: Any) -> dict[str, Any]:
    cfg = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        "enable.idempotence": True,  # implies acks=all and in-order, no-duplicate retries
        "linger.ms": 5,
        "compression.type": "lz4",
        "message.max.bytes": 10_000_000,
        "delivery.timeout.ms": 120_000,
    }
    cfg.update(overrides)
    return cfg


class EventProducer:
    def __init__(self, bootstrap: str | None = None, codec: Codec = CODEC, **overrides: Any):
        self._producer = Producer(producer_config(bootstrap, **overrides))
        self._codec = codec
        self.delivered = 0
        self.failed: list[str] = []

    def _on_delivery(self, err: KafkaError | None, msg) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    def send(self, topic: str, key: str | bytes | None, payload: str, record: dict[str, Any]) -> dict[str, Any]:
        """Encode `record` as `payload` (an Avro record name) and produce it. Adds the envelope
        fields (event_id, schema_version, created_at_ms) when missing; returns the full record."""
        full = {**new_event_fields(), **record}
        self.send_raw(topic, key, self._codec.encode(payload, full))
        return full

    def send_raw(self, topic: str, key: str | bytes | None, value: bytes) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=self._on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                self._producer.poll(0.1)
        self._producer.poll(0)

    def flush(self, timeout_s: float = 60.0) -> None:
        remaining = self._producer.flush(timeout_s)
        if remaining:
            raise DeliveryError(f"{remaining} records still undelivered after {timeout_s}s")
        if self.failed:
            failed, self.failed = self.failed, []
            raise DeliveryError(f"{len(failed)} records not delivered: {failed[:5]}")

    def __enter__(self) -> "EventProducer":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()


@dataclass
class ConsumedEvent:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    timestamp_ms: int
    payload: str
    record: dict[str, Any]


def consumer_config(group_id: str, bootstrap: str | None = None, **overrides: Any) -> dict[str, Any]:
    cfg = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        "group.id": group_id,
        "enable.auto.commit": False,  # commit only what was processed
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": 10_000,
    }
    cfg.update(overrides)
    return cfg


class EventConsumer:
    def __init__(self, topics: list[str], group_id: str, bootstrap: str | None = None,
                 codec: Codec = CODEC, dead_letters: EventProducer | None = None, **overrides: Any):
        self.group_id = group_id
        self._consumer = Consumer(consumer_config(group_id, bootstrap, **overrides))
        self._codec = codec
        self._dead_letters = dead_letters or EventProducer(bootstrap)
        self.dead_lettered = 0
        self._pending_poison: list[TopicPartition] = []
        self._consumer.subscribe(topics)

    @property
    def raw(self) -> Consumer:
        return self._consumer

    def poll_batch(self, max_records: int = 500, timeout_s: float = 1.0) -> list[ConsumedEvent]:
        """Up to `max_records` decoded events. Undecodable ones are dead-lettered (and their
        offsets still advance with the batch), so a poison record never blocks the stream."""
        messages = self._consumer.consume(max_records, timeout_s)
        events: list[ConsumedEvent] = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and not err.fatal():
                    # a subscribed pattern with no topic yet (advantages.* before any config
                    # ran): the consumer picks it up once it exists
                    log.debug("%s", err.str())
                    continue
                raise KafkaException(err)
            try:
                payload, record = self._codec.decode_named(msg.value())
            except DecodeError as exc:
                self._dead_letter(msg, exc)
                self._pending_poison.append(TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1))
                continue
            ts = msg.timestamp()[1]
            events.append(ConsumedEvent(msg.topic(), msg.partition(), msg.offset(), msg.key(), ts, payload, record))
        return events

    def _dead_letter(self, msg, exc: Exception) -> None:
        self.dead_lettered += 1
        log.warning("dead-lettering %s[%d]@%d: %s", msg.topic(), msg.partition(), msg.offset(), exc)
        self._dead_letters.send(DEAD_LETTER_TOPIC, msg.topic(), "DeadLetter", dead_letter_record(
            msg.topic(), msg.partition(), msg.offset(), self.group_id, msg.key(), msg.value(), exc))

    def commit(self, events: Iterable[ConsumedEvent] = ()) -> None:
        """Synchronously commit the offsets after `events` and any dead-lettered records seen,
        once the dead letters themselves are delivered. Call it with the whole processed batch."""
        positions: dict[tuple[str, int], int] = {}
        for tp in self._pending_poison:
            positions[(tp.topic, tp.partition)] = max(positions.get((tp.topic, tp.partition), 0), tp.offset)
        for ev in events:
            key = (ev.topic, ev.partition)
            positions[key] = max(positions.get(key, 0), ev.offset + 1)
        if not positions:
            return
        if self._pending_poison:
            self._dead_letters.flush()
        self._consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()], asynchronous=False)
        self._pending_poison = []

    def close(self) -> None:
        try:
            self._dead_letters.flush()
        finally:
            self._consumer.close()


def read_topic(topic: str, bootstrap: str | None = None, codec: Codec = CODEC, timeout_s: float = 60.0) -> list[ConsumedEvent]:
    """Every decodable record of a topic, from the beginning to its current end (tools, tests,
    reports). Reads by assignment, so it joins no group and commits nothing."""
    consumer = Consumer(consumer_config(f"reader-{time.time_ns()}", bootstrap, **{"enable.partition.eof": False}))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends, deadline = {}, time.monotonic() + timeout_s
        for p in partitions:
            # right after a broker start a partition may have no leader yet: negative offsets
            while True:
                try:
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
                    if low >= 0 and high >= 0:
                        break
                except KafkaException:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic}[{p}]: no leader to read from")
                time.sleep(0.2)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        events: list[ConsumedEvent] = []
        position = {p: 0 for p in ends}
        while any(position[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: read {sum(position.values())} of {sum(ends.values())} records")
            for msg in consumer.consume(5000, 0.5):
                if msg.error():
                    continue
                position[msg.partition()] = msg.offset() + 1
                if msg.offset() >= ends[msg.partition()]:
                    continue
                try:
                    payload, record = codec.decode_named(msg.value())
                except DecodeError:
                    continue
                events.append(ConsumedEvent(msg.topic(), msg.partition(), msg.offset(), msg.key(),
                                            msg.timestamp()[1], payload, record))
        return events
    finally:
        consumer.close()
