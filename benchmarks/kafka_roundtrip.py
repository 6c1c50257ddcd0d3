"""Produce and consume events/s for N small Avro events through the real broker, and the
codec's share of the time as a ratio against moving the same raw bytes. Consuming is
measured three ways: raw bytes (each value taken out of its message, as any consumer
does), every value decoded to a dict, and only the header read (writer schema looked
up), which is what the sink does before ClickHouse decodes the bodies.

    python benchmarks/kafka_roundtrip.py [--n 100000]   (brings the local broker up)
"""

from __future__ import annotations

import argparse
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from infra.platform.broker import KafkaBroker
from infra.platform.kafka_io import EventProducer, consumer_config, producer_config
from infra.platform.settings import bootstrap_servers
from infra.platform.topics import KEEP_FOREVER, TopicSpec, ensure_topics
from schemas.codec import CODEC, new_event_fields


def small_event(i: int) -> dict:
    return {**new_event_fields(), "source": "bench", "step": i, "config_id": "", "values": {"reward": i * 0.5},
            "labels": {}}


def consume_all(topic: str, n: int, read) -> float:
    """Seconds to consume n events, calling `read` on each value (`bytes`: the raw bytes only)."""
    consumer = Consumer(consumer_config(f"bench-{uuid.uuid4().hex}"))
    consumer.subscribe([topic])
    seen, t0 = 0, None
    while seen < n:
        for msg in consumer.consume(5000, 1.0):
            if msg.error():
                continue
            t0 = t0 or time.perf_counter()
            read(msg.value())
            seen += 1
    elapsed = time.perf_counter() - t0
    consumer.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5, help="consume passes of each kind; the best is kept")
    args = ap.parse_args()
    n = args.n
    bootstrap = KafkaBroker().up().bootstrap if "RESHAPER_BOOTSTRAP" not in __import__("os").environ else bootstrap_servers()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    raw_topic, avro_topic = f"bench-raw-{uuid.uuid4().hex[:8]}", f"bench-avro-{uuid.uuid4().hex[:8]}"
    ensure_topics(admin, [TopicSpec(raw_topic, 4, 1, KEEP_FOREVER), TopicSpec(avro_topic, 4, 1, KEEP_FOREVER)])
    events = [small_event(i) for i in range(n)]

    t = time.perf_counter()
    payloads = [CODEC.encode("Metric", e) for e in events]
    encode_s = time.perf_counter() - t
    t = time.perf_counter()
    for p in payloads:
        CODEC.decode(p)
    decode_s = time.perf_counter() - t
    size = sum(map(len, payloads)) / n

    raw = Producer(producer_config(bootstrap))
    t = time.perf_counter()
    for i, p in enumerate(payloads):
        while True:
            try:
                raw.produce(raw_topic, p, key=str(i % 64))
                break
            except BufferError:
                raw.poll(0.05)
    raw.flush()
    raw_produce_s = time.perf_counter() - t

    producer = EventProducer(bootstrap)
    t = time.perf_counter()
    for i, e in enumerate(events):
        producer.send(avro_topic, str(i % 64), "Metric", e)
    producer.flush()
    avro_produce_s = time.perf_counter() - t

    # a consume of 100k small events takes a fraction of a second, so one pass is mostly noise:
    # the three ways take turns, and each keeps its best of --repeats
    raw_consume_s = avro_consume_s = framed_consume_s = float("inf")
    for _ in range(args.repeats):
        raw_consume_s = min(raw_consume_s, consume_all(raw_topic, n, bytes))
        avro_consume_s = min(avro_consume_s, consume_all(avro_topic, n, CODEC.decode))
        framed_consume_s = min(framed_consume_s, consume_all(avro_topic, n, CODEC.header))
    admin.delete_topics([raw_topic, avro_topic])

    print(f"{n} events, {size:.0f} bytes each (Avro single-object encoding)")
    print(f"codec alone        : encode {n / encode_s:>10,.0f} ev/s   decode {n / decode_s:>10,.0f} ev/s")
    print(f"produce  raw bytes : {n / raw_produce_s:>10,.0f} ev/s")
    print(f"produce  Avro      : {n / avro_produce_s:>10,.0f} ev/s   ratio to raw {raw_produce_s / avro_produce_s:.2f}"
          f"   codec share {encode_s / avro_produce_s:.0%}")
    print(f"consume  raw bytes : {n / raw_consume_s:>10,.0f} ev/s")
    print(f"consume  Avro      : {n / avro_consume_s:>10,.0f} ev/s   ratio to raw {raw_consume_s / avro_consume_s:.2f}"
          f"   codec share {decode_s / avro_consume_s:.0%}")
    print(f"consume  Avro, header only (the sink's path, bodies decoded by ClickHouse): "
          f"{n / framed_consume_s:>10,.0f} ev/s   ratio to raw {raw_consume_s / framed_consume_s:.2f}")


if __name__ == "__main__":
    main()
