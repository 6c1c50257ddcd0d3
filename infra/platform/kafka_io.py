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

from infra.platform.settings import bootstrap_servers
from infra.platform.topics import Topics
from schemas.codec import CODEC, HEADER_LEN, Codec, DecodeError
from schemas.records import build_record

log = logging.getLogger(__name__)


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
    def __init__(self, bootstrap: str | None = None, codec: Codec = CODEC, count_deliveries: bool = True,
                 **overrides: Any):
        """``count_deliveries=False``: the client reports failed deliveries only, sparing a Python
        callback per record on bulk writers (``delivered`` then stays 0; failures still raise)."""
        if not count_deliveries:
            overrides = {"delivery.report.only.error": True, **overrides}
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
        """Encode `record` as `payload` (an Avro record name) and produce it. The record is
        completed by its schema (`build_record`: the envelope when missing, every default) and
        refused with a ValueError for a field the schema lacks; returns the full record."""
        full = build_record(payload, codec=self._codec, new_event=True, **record)
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


@dataclass
class FramedEvent:
    """A consumed value with a known writer schema, its Avro body not decoded."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    timestamp_ms: int
    payload: str
    fingerprint: bytes
    current: bool  # written with the payload's current schema
    value: bytes

    @property
    def body(self) -> memoryview:
        return memoryview(self.value)[HEADER_LEN:]


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


# the group's coordinator is moving (its broker died, or is back and loading): the same commit
# goes through once the group has found it again
COORDINATOR_MOVING = frozenset({
    KafkaError._WAIT_COORD, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TRANSPORT, KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TIMED_OUT})


# the consumer is no longer the member that owns these partitions (its session ran out while the
# coordinator was away): the commit cannot happen, and the records are read again by their owner
MEMBERSHIP_LOST = frozenset({KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                             KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID})


def commit_through_coordinator_moves(consumer: Consumer, offsets: list[TopicPartition],
                                     timeout_s: float = 120.0) -> bool:
    """A synchronous commit of `offsets`, tried again while the group's coordinator moves (up to
    `timeout_s`). A broker lost in a cluster takes its groups' coordination with it for seconds.
    False when the consumer lost its group membership meanwhile: the records after the last
    commit are then delivered again (at least once), which every consumer here tolerates, since
    each record carries its id."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in MEMBERSHIP_LOST:
                log.warning("commit dropped, the group membership was lost (%s): the records since the "
                            "last commit will be read again", error.str())
                return False
            if error.code() not in COORDINATOR_MOVING or time.monotonic() >= deadline:
                raise
            log.warning("commit waits for the group coordinator: %s", error.str())
            time.sleep(0.5)


class EventConsumer:
    def __init__(self, topics: list[str], group_id: str, bootstrap: str | None = None,
                 codec: Codec = CODEC, dead_letters: EventProducer | None = None,
                 dead_letter_topic: str = Topics().deadletter, **overrides: Any):
        self.group_id = group_id
        self.dead_letter_topic = dead_letter_topic
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
        events: list[ConsumedEvent] = []
        for msg in self._messages(max_records, timeout_s):
            try:
                payload, record = self._codec.decode_named(msg.value())
            except DecodeError as exc:
                self._dead_letter(msg, exc)
                continue
            ts = msg.timestamp()[1]
            events.append(ConsumedEvent(msg.topic(), msg.partition(), msg.offset(), msg.key(), ts, payload, record))
        return events

    def poll_framed(self, max_records: int = 500, timeout_s: float = 1.0) -> list[FramedEvent]:
        """Up to `max_records` events whose header names a known writer schema, bodies not
        decoded (for a consumer that hands them on encoded). A bad header is dead-lettered as
        in `poll_batch`; a corrupt body is for the caller to find and pass to `dead_letter`."""
        events: list[FramedEvent] = []
        for msg in self._messages(max_records, timeout_s):
            value = msg.value()
            try:
                fp, payload, current = self._codec.header(value)
            except DecodeError as exc:
                self._dead_letter(msg, exc)
                continue
            events.append(FramedEvent(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.timestamp()[1],
                                      payload, fp, current, value))
        return events

    def dead_letter(self, event: FramedEvent, exc: Exception) -> None:
        """Dead-letter an event of a `poll_framed` batch that turned out unusable; its offset
        is committed with the next `commit`, as for the dead letters the consumer finds itself."""
        self._send_dead_letter(event.topic, event.partition, event.offset, event.key, event.value, exc)

    def _messages(self, max_records: int, timeout_s: float) -> list:
        """The polled messages that carry a value; broker errors are raised, end-of-partition
        and not-yet-created topic notices skipped."""
        usable = []
        for msg in self._consumer.consume(max_records, timeout_s):
            err = msg.error()
            if err is None:
                usable.append(msg)
            elif err.code() == KafkaError._PARTITION_EOF:
                continue
            elif err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and not err.fatal():
                # a subscribed pattern with no topic yet (advantages.* before any config
                # ran): the consumer picks it up once it exists
                log.debug("%s", err.str())
            else:
                raise KafkaException(err)
        return usable

    def _dead_letter(self, msg, exc: Exception) -> None:
        self._send_dead_letter(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), exc)

    def _send_dead_letter(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                          exc: Exception) -> None:
        self.dead_lettered += 1
        log.warning("dead-lettering %s[%d]@%d: %s", topic, partition, offset, exc)
        self._dead_letters.send(self.dead_letter_topic, topic, "DeadLetter", dead_letter_record(
            topic, partition, offset, self.group_id, key, value, exc))
        self._pending_poison.append(TopicPartition(topic, partition, offset + 1))

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
        commit_through_coordinator_moves(
            self._consumer, [TopicPartition(t, p, o) for (t, p), o in positions.items()])
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
