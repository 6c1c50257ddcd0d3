"""Against the real broker: produce/consume fidelity, per-key order, commit semantics,
dead letters, topics as code."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from confluent_kafka import Producer

from infra.platform.kafka_io import DeliveryError, EventConsumer, EventProducer
from infra.platform.topics import TopicConfigMismatch, Topics, TopicSpec, ensure_topics, verify_topics
from schemas.codec import Codec

pytestmark = pytest.mark.kafka


def _drain(consumer: EventConsumer, want: int, timeout_s: float = 60.0):
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll_batch(1000, 0.5))
    return got


def _metric(i: int, key: str) -> dict:
    return {"source": key, "step": i, "config_id": "", "values": {"i": float(i)}, "labels": {"k": key}}


def test_ten_thousand_events_round_trip_in_per_key_order(kafka_bootstrap, fresh_topic):
    topic = fresh_topic("roundtrip", partitions=4)
    keys = [f"group-{k}" for k in range(17)]
    sent = []
    with EventProducer(kafka_bootstrap) as producer:
        for i in range(10_000):
            key = keys[i % len(keys)]
            sent.append(producer.send(topic, key, "Metric", _metric(i, key)))
    assert producer.delivered == 10_000

    consumer = EventConsumer([topic], f"g-{uuid.uuid4().hex}", kafka_bootstrap)
    got = _drain(consumer, 10_000)
    consumer.commit(got)
    consumer.close()

    assert len(got) == 10_000
    by_id = {r["event_id"]: r for r in sent}
    assert all(by_id[e.record["event_id"]] == e.record for e in got)  # identical records
    for key in keys:  # per-key order is production order
        steps = [e.record["step"] for e in got if e.key.decode() == key]
        assert steps == sorted(steps) and len(steps) == len([s for s in sent if s["source"] == key])
    for e in got:  # a key always lands on one partition
        assert len({x.partition for x in got if x.key == e.key}) == 1
        break


CONSUMER_SCRIPT = textwrap.dedent("""
    import sys, time
    from infra.platform.kafka_io import EventConsumer
    topic, group, bootstrap, commit_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    c = EventConsumer([topic], group, bootstrap)
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        batch = c.poll_batch(50, 0.5)
        for e in batch:
            seen.append(e.record["step"])
            print(e.record["step"], flush=True)
            if len(seen) == commit_after:
                c.commit([e])
                print("COMMITTED", flush=True)
    """)


def test_consumer_killed_before_commit_rereads_from_last_commit(kafka_bootstrap, fresh_topic):
    topic = fresh_topic("kill", partitions=1)
    with EventProducer(kafka_bootstrap) as producer:
        for i in range(300):
            producer.send(topic, "k", "Metric", _metric(i, "k"))
    group = f"g-{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", CONSUMER_SCRIPT, topic, group, kafka_bootstrap, "120"],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if len(lines) > 130 and "COMMITTED" in lines:  # processed past the commit, then dies
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert "COMMITTED" in lines

    consumer = EventConsumer([topic], group, kafka_bootstrap)
    rest = _drain(consumer, 180)
    consumer.close()
    steps = [e.record["step"] for e in rest]
    assert steps == list(range(120, 300))  # nothing lost, resumes exactly after the commit


def test_poison_records_go_to_dead_letters_and_the_next_record_is_not_lost(kafka_bootstrap, fresh_topic, kafka_admin):
    ensure_topics(kafka_admin, [s for s in Topics().event_specs() if s.name == Topics().deadletter])
    topic = fresh_topic("poison", partitions=1)
    alien = Codec()
    alien.register({"type": "record", "name": "Alien", "fields": [{"name": "x", "type": "int"}]})
    raw = Producer({"bootstrap.servers": kafka_bootstrap})
    with EventProducer(kafka_bootstrap) as producer:
        producer.send(topic, "k", "Metric", _metric(0, "k"))
        producer.flush()  # two producers: order them explicitly
        raw.produce(topic, key=b"k", value=b"plain garbage bytes")
        raw.produce(topic, key=b"k", value=alien.encode("Alien", {"x": 1}))
        raw.flush()
        producer.send(topic, "k", "Metric", _metric(1, "k"))

    dlq_watch = EventConsumer([Topics().deadletter], f"w-{uuid.uuid4().hex}", kafka_bootstrap)
    consumer = EventConsumer([topic], f"g-{uuid.uuid4().hex}", kafka_bootstrap)
    got = _drain(consumer, 2)
    consumer.commit(got)
    assert [e.record["step"] for e in got] == [0, 1]
    assert consumer.dead_lettered == 2
    consumer.close()

    letters = [e for e in _drain(dlq_watch, 10_000, timeout_s=8) if e.record["source_topic"] == topic]
    dlq_watch.close()
    assert sorted(l.record["error_type"] for l in letters) == ["MalformedRecordError", "UnknownSchemaError"]
    assert {l.record["source_offset"] for l in letters} == {1, 2}
    assert b"plain garbage bytes" in [l.record["value"] for l in letters]


def test_topics_as_code_are_created_and_verified(kafka_admin):
    specs = Topics().event_specs() + [Topics().advantages_spec("cfgtest01")]
    ensure_topics(kafka_admin, specs)
    assert verify_topics(kafka_admin, specs) == []
    assert ensure_topics(kafka_admin, specs) == []  # idempotent
    with pytest.raises(TopicConfigMismatch, match="partitions"):
        ensure_topics(kafka_admin, [TopicSpec("rollouts", 7, 1, {})])
    with pytest.raises(TopicConfigMismatch, match="cleanup.policy"):
        ensure_topics(kafka_admin, [TopicSpec("rollouts", 4, 1, {"cleanup.policy": "compact"})])
    assert specs[-1].name.startswith("advantages.")
    with pytest.raises(ValueError):
        Topics().advantages_spec("bad id!")


def test_a_producer_without_delivery_counts_still_raises_on_failed_deliveries(kafka_bootstrap, fresh_topic):
    topic = fresh_topic("quiet-producer", partitions=1)
    producer = EventProducer(kafka_bootstrap, count_deliveries=False)
    for i in range(100):
        producer.send(topic, "k", "Metric", _metric(i, "k"))
    producer.flush()
    assert producer.delivered == 0  # successes are not reported one by one
    consumer = EventConsumer([topic], f"g-{uuid.uuid4().hex}", kafka_bootstrap)
    assert [e.record["step"] for e in _drain(consumer, 100)] == list(range(100))
    consumer.close()
    small = fresh_topic("small-records", partitions=1, config={"max.message.bytes": "1024"})
    producer.send_raw(small, b"k", os.urandom(4096))  # the broker refuses it: a failed delivery, reported
    with pytest.raises(DeliveryError, match="too large|TOO_LARGE"):
        producer.flush(timeout_s=30)
