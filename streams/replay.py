"""Replay the feedback log under a reshaping config into ``advantages.<config_id>``.

The fast path: a confluent-kafka consumer reads every feedback partition from the start
(or from a timestamp) and feeds each partition's records, in log order, through the same
``PartitionReshaper`` the reshape agent uses -- same group buffer, same log-time
timeouts, same per-partition state -- so replaying with the config of a live stream
reproduces its advantages exactly, and a new config writes a new stream beside it. A
bounded replay stops once every partition reached the end offset it had when the replay
began, releasing the groups still pending (``--follow`` keeps reading instead).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from infra.kafka_io import EventProducer
from infra.topics import KEEP_FOREVER, TopicSpec, advantages_topic, ensure_topics
from schemas.codec import CODEC, DecodeError
from streams.agents.deadletters import dead_letter_value
from streams.agents.processor import Output, PartitionReshaper
from streams.agents.reshape import new_reshaper
from streams.app import StreamSettings, advantages_topic_name
from streams.reshaping.config import ReshapingConfig


class ReplayOptions(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    bootstrap: str = Field(..., description="Kafka bootstrap servers.")
    settings: StreamSettings = Field(default_factory=StreamSettings, description="topics and group timeouts.")
    start_ms: int | None = Field(None, description="replay from this log time (ms); None: from the start.")
    follow: bool = Field(False, description="keep reading after catching up instead of stopping.")
    progress: bool = Field(False, description="show a tqdm bar with events/s and lag.")
    batch: int = Field(2000, ge=1, description="records fetched per poll.")


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


def replay_app_id(cfg: ReshapingConfig) -> str:
    """Consumer group / namespace of a replay: derived from the config id."""
    return f"reshaper-replay-{cfg.config_id}"


def _start_positions(consumer: Consumer, topic: str, partitions: int, start_ms: int | None) -> list[TopicPartition]:
    if start_ms is None:
        return [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
    wanted = [TopicPartition(topic, p, start_ms) for p in range(partitions)]
    return consumer.offsets_for_times(wanted, timeout=10)


def run_replay(cfg: ReshapingConfig, options: ReplayOptions) -> ReplayReport:
    settings = options.settings
    source = settings.feedback_topic
    app_id = replay_app_id(cfg)
    topic = advantages_topic_name(cfg, settings)
    spec = replace(advantages_topic(cfg.config_id, settings.partitions), name=topic)
    sides = [TopicSpec(name, 1, 1, KEEP_FOREVER) for name in (settings.metrics_topic, settings.deadletter_topic)]
    ensure_topics(AdminClient({"bootstrap.servers": options.bootstrap}), [spec, *sides])
    consumer = Consumer({
        "bootstrap.servers": options.bootstrap, "group.id": app_id, "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True,
    })
    producer = EventProducer(options.bootstrap)
    partitions = len(consumer.list_topics(source, timeout=10).topics[source].partitions)
    ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=10)[1] for p in range(partitions)}
    consumer.assign(_start_positions(consumer, source, partitions, options.start_ms))
    reshapers = {p: new_reshaper(cfg, settings, p) for p in range(partitions)}
    done = {p for p in range(partitions) if ends[p] == 0}
    counts = {"feedback": 0, "advantages": 0, "dead": 0}
    bar = tqdm(total=sum(ends.values()), unit="ev", disable=not options.progress, desc=f"replay {cfg.config_id}")

    def send(out: Output) -> None:
        for rec in out.advantages:
            producer.send_raw(topic, rec["group_id"].encode(), CODEC.encode("Advantage", rec))
        for metric in out.metrics:
            producer.send_raw(settings.metrics_topic, b"reshape", CODEC.encode("Metric", metric))
        for fb, exc in out.rejected:
            producer.send_raw(settings.deadletter_topic, source.encode(), dead_letter_value(
                source, -1, -1, app_id, str(fb.get("group_id", "")).encode(), None, exc))
        counts["advantages"] += len(out.advantages)
        counts["dead"] += len(out.rejected)

    started = time.monotonic()
    try:
        while options.follow or len(done) < partitions:
            for msg in consumer.consume(options.batch, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done.add(msg.partition())
                        continue
                    raise KafkaException(err)
                p, offset = msg.partition(), msg.offset()
                if offset + 1 >= ends[p]:
                    done.add(p)
                try:
                    feedback = CODEC.decode(msg.value(), "Feedback")
                except DecodeError as exc:
                    producer.send_raw(settings.deadletter_topic, source.encode(), dead_letter_value(
                        source, p, offset, app_id, msg.key(), msg.value(), exc))
                    counts["dead"] += 1
                    continue
                send(reshapers[p].on_feedback(feedback, offset, msg.timestamp()[1]))
                counts["feedback"] += 1
            bar.n = counts["feedback"]
            elapsed = max(time.monotonic() - started, 1e-9)
            bar.set_postfix(rate=f"{counts['feedback'] / elapsed:.0f}/s", lag=max(bar.total - bar.n, 0), refresh=False)
            bar.refresh()
        for reshaper in reshapers.values():
            send(reshaper.drain())
        producer.flush()
    finally:
        bar.close()
        consumer.close()
    return ReplayReport(topic, counts["feedback"], counts["advantages"], counts["dead"],
                        time.monotonic() - started)
