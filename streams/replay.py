"""Replay the feedback log under a reshaping config into ``advantages.<config_id>``.

No Faust here: the replay shares only the pure per-partition logic with the reshape agent.
Each feedback partition is read from the start (or from a timestamp) by a confluent-kafka
consumer in large batches and fed, in log order, through the same ``PartitionReshaper``
-- same group buffer, same log-time timeouts, same per-partition state -- so replaying
with the config of a live stream reproduces its advantages exactly, and a new config
writes a new stream beside it. Partitions share no state, so they replay in parallel
processes. Records are produced without waiting for each delivery; a replay flushes (and
raises on any undelivered record) before it reports. A bounded replay stops once every
partition reached the end offset it had when the replay began, releasing the groups still
pending (``follow`` keeps reading instead).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics, ensure_topics
from schemas.codec import CODEC, DecodeError
from streams.agents.emit import encoded_output, undecodable
from streams.agents.processor import Output, new_reshaper
from streams.reshaping.config import ReshapingConfig
from streams.settings import StreamSettings


class ReplayOptions(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    bootstrap: str = Field(..., description="Kafka bootstrap servers.")
    settings: StreamSettings = Field(default_factory=StreamSettings, description="topics and group timeouts.")
    into: Topics | None = Field(None, description="the namespace the advantages, metrics and dead letters go "
                                "to; None: the one the feedback is read from.")
    start_ms: int | None = Field(None, description="replay from this log time (ms); None: from the start.")
    follow: bool = Field(False, description="keep reading after catching up instead of stopping.")
    progress: bool = Field(False, description="show a tqdm bar of replayed partitions.")
    batch: int = Field(10_000, ge=1, description="records fetched per poll.")
    processes: int | None = Field(
        None, ge=1, description="parallel replay processes, each with its share of the partitions; "
        "None: one per partition, at most one per CPU.")


@dataclass
class ReplayReport:
    topic: str
    feedback: int
    advantages: int
    dead_letters: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.feedback / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Counts:
    feedback: int = 0
    advantages: int = 0
    dead: int = 0


def replay_app_id(cfg: ReshapingConfig) -> str:
    """Consumer group / namespace of a replay: derived from the config id."""
    return f"reshaper-replay-{cfg.config_id}"


def _start_positions(consumer: Consumer, topic: str, partitions: list[int],
                     start_ms: int | None) -> list[TopicPartition]:
    if start_ms is None:
        return [TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions]
    return consumer.offsets_for_times([TopicPartition(topic, p, start_ms) for p in partitions], timeout=10)


def replay_partitions(cfg: ReshapingConfig, options: ReplayOptions, partitions: list[int]) -> _Counts:
    """Replay ``partitions`` of the feedback topic into ``advantages.<config_id>`` (one process's share)."""
    source = options.settings.topics.feedback
    topics = options.into or options.settings.topics
    app_id = replay_app_id(cfg)
    consumer = Consumer({
        "bootstrap.servers": options.bootstrap, "group.id": app_id, "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True,
        "fetch.max.bytes": 64 * 1024 * 1024, "max.partition.fetch.bytes": 16 * 1024 * 1024,
    })
    producer = EventProducer(options.bootstrap, count_deliveries=False, **{"linger.ms": 20, "batch.size": 1_000_000})
    counts = _Counts()
    decode = CODEC.decode

    def send(out: Output) -> None:
        for rec in encoded_output(out, topics, cfg.config_id, app_id, source):
            producer.send_raw(rec.topic, rec.key, rec.value)
        counts.advantages += len(out.advantages)
        counts.dead += len(out.rejected)

    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=10)[1] for p in partitions}
        starts = _start_positions(consumer, source, partitions, options.start_ms)
        # a partition with nothing (left) to read is done before it starts
        done = {tp.partition for tp in starts if ends[tp.partition] == 0 or tp.offset == -1}
        consumer.assign([tp for tp in starts if tp.partition not in done or options.follow])
        reshapers = {p: new_reshaper(cfg, options.settings, p) for p in partitions}
        with _bulk_collection():
            while options.follow or len(done) < len(partitions):
                out = Output()  # a whole fetched batch is encoded and sent at once, in order
                for msg in consumer.consume(options.batch, 0.5):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            done.add(msg.partition())
                            continue
                        raise KafkaException(err)
                    p, offset, log_ms = msg.partition(), msg.offset(), msg.timestamp()[1]
                    if offset + 1 >= ends[p]:
                        done.add(p)
                    try:
                        feedback = decode(msg.value(), "Feedback")
                    except DecodeError as exc:
                        send(out)  # what came before the dead letter goes first
                        out = Output()
                        dead = undecodable(topics, p, offset, app_id, msg.key(), msg.value(), exc, source)
                        producer.send_raw(dead.topic, dead.key, dead.value)
                        counts.dead += 1
                        reshapers[p].on_undecodable(offset, log_ms, out)
                        continue
                    reshapers[p].on_feedback(feedback, offset, log_ms, out)
                    counts.feedback += 1
                send(out)
        for reshaper in reshapers.values():
            send(reshaper.drain())
        producer.flush()
    finally:
        consumer.close()
    return counts


@contextmanager
def _bulk_collection() -> Iterator[None]:
    """Young-generation collections far apart while a replay churns through short-lived
    records (none of which form cycles): about 6 % of a replay's time at the default
    thresholds. The long-lived heap built so far is frozen out of every collection."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def run_replay(cfg: ReshapingConfig, options: ReplayOptions) -> ReplayReport:
    settings, topics = options.settings, options.into or options.settings.topics
    source, topic = settings.topics.feedback, topics.advantages(cfg.config_id)
    admin = AdminClient({"bootstrap.servers": options.bootstrap})
    written = {topic, topics.metrics, topics.deadletter}
    ensure_topics(admin, [spec for spec in topics.event_specs(settings.partitions) if spec.name in written]
                  + [topics.advantages_spec(cfg.config_id, settings.partitions)])
    partitions = sorted(admin.list_topics(source, timeout=10).topics[source].partitions)
    processes = options.processes or max(1, min(len(partitions), os.cpu_count() or 1))
    shares = [partitions[i::processes] for i in range(processes)]
    total = _Counts()
    started = time.monotonic()
    with tqdm(total=len(partitions), unit="partition", disable=not options.progress,
              desc=f"replay {cfg.config_id}") as bar:
        if processes == 1:
            results = [replay_partitions(cfg, options, partitions)]
            bar.update(len(partitions))
        else:
            # spawn, not fork: the caller may hold Kafka clients and threads of its own
            with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
                futures = [pool.submit(replay_partitions, cfg, options, share) for share in shares]
                results = []
                for future, share in zip(futures, shares):
                    results.append(future.result())
                    bar.update(len(share))
    for counts in results:
        total.feedback += counts.feedback
        total.advantages += counts.advantages
        total.dead += counts.dead
    return ReplayReport(topic, total.feedback, total.advantages, total.dead, time.monotonic() - started)
