"""The sink against the real broker and chDB: exact counts, dead letters, crash safety."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Producer

from consumers.store import open_store
from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics, ensure_topics

pytestmark = pytest.mark.kafka

METRICS = Topics().metrics  # the sink tests write metrics: small records of every kind of field


def _metrics(producer: EventProducer, tag: str, n: int) -> None:
    for i in range(n):
        producer.send(METRICS, tag, "Metric", {"source": tag, "step": i, "config_id": "", "values": {"v": float(i)},
                                                 "labels": {}})


def _count(store_path, tag: str) -> tuple[int, int, int]:
    with open_store(str(store_path)) as store:
        final = store.query("SELECT count() FROM metrics FINAL WHERE source = {t:String}", {"t": tag}).rows[0][0]
        distinct = store.query("SELECT uniqExact(event_id) FROM metrics WHERE source = {t:String}", {"t": tag}).rows[0][0]
        plain = store.query("SELECT count() FROM metrics WHERE source = {t:String}", {"t": tag}).rows[0][0]
    return final, distinct, plain


def _sink_cmd(store_path, group, *extra):
    return [sys.executable, "-m", "infra.compose.cli", "sink", "--store", str(store_path), "--group-id", group, *extra]


def test_sink_stores_every_event_once_and_dead_letters_poison(kafka_bootstrap, kafka_admin, tmp_path):

    ensure_topics(kafka_admin, Topics().event_specs())
    tag = f"sink-{uuid.uuid4().hex[:8]}"
    with EventProducer(kafka_bootstrap) as producer:
        _metrics(producer, tag, 500)
        producer.flush()
        raw = Producer({"bootstrap.servers": kafka_bootstrap})
        raw.produce(METRICS, key=tag.encode(), value=b"\x00 not avro " + tag.encode())
        raw.flush()
        _metrics(producer, tag + "b", 3)
    store_path = tmp_path / "chdb"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(_sink_cmd(store_path, f"g-{tag}", "--batch-rows", "200", "--idle-exit", "4"),
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    # a second pass of the same group stores nothing new
    again = subprocess.run(_sink_cmd(store_path, f"g-{tag}", "--idle-exit", "3"), env=env, capture_output=True,
                           text=True, timeout=300)
    assert "stored 0 rows" in again.stdout or "dead_letters" in again.stdout, again.stdout
    assert _count(store_path, tag) == (500, 500, 500)
    assert _count(store_path, tag + "b") == (3, 3, 3)
    with open_store(str(store_path)) as store:
        letters = store.query("SELECT count() FROM dead_letters FINAL WHERE position(value, {t:String}) > 0",
                              {"t": tag}).rows[0][0]
    assert letters == 1


def test_sink_killed_mid_batch_loses_and_duplicates_nothing(kafka_bootstrap, kafka_admin, tmp_path):

    ensure_topics(kafka_admin, Topics().event_specs())
    tag = f"crash-{uuid.uuid4().hex[:8]}"
    n = 20_000
    with EventProducer(kafka_bootstrap) as producer:
        _metrics(producer, tag, n)
    store_path = tmp_path / "chdb"
    group = f"g-{tag}"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(_sink_cmd(store_path, group, "--batch-rows", "1500", "--batch-seconds", "30"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # kill it once some batches are committed but before it has everything
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    deadline = time.monotonic() + 240
    committed = 0
    while time.monotonic() < deadline:
        offs = probe.committed([TopicPartition(METRICS, 0)], timeout=5)
        committed = max(offs[0].offset, 0)
        if committed > 0:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    probe.close()
    assert committed > 0
    before = _count(store_path, tag)[0]
    assert before < n  # it really died mid-stream

    out = subprocess.run(_sink_cmd(store_path, group, "--batch-rows", "1500", "--idle-exit", "4"), env=env,
                         capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr[-2000:]
    # once under FINAL and once without it: the replayed tail was dropped, not collapsed later
    assert _count(store_path, tag) == (n, n, n)


def _commit_at_end(bootstrap: str, group: str, topic: str, before: int) -> None:
    """Commit `group` at `topic`'s end less the last `before` records (one partition)."""
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    end = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    probe.commit(offsets=[TopicPartition(topic, 0, end - before)], asynchronous=False)
    probe.close()


def _sink_until_idle(sink, idle_s: float = 4.0, timeout_s: float = 120.0) -> None:
    deadline, last = time.monotonic() + timeout_s, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - last < idle_s:
        if sink.poll_once() or not sink.consumer.raw.assignment():
            last = time.monotonic()
    sink.flush()


def test_sink_stores_older_writer_schemas_and_dead_letters_a_corrupt_body(kafka_bootstrap, kafka_admin, tmp_path):
    """A body that ClickHouse cannot read sends its file down the decode path: the corrupt record
    is dead-lettered and the others of its batch are stored once; a record of an older writer
    schema is resolved to the current one (its missing field takes the default)."""
    from consumers.sink import Sink, SinkConfig
    from consumers.store import ChdbStore
    from schemas.codec import CODEC, HEADER_LEN, Codec

    ensure_topics(kafka_admin, Topics().event_specs())
    tag = f"framed-{uuid.uuid4().hex[:8]}"
    current = CODEC.schema("Metric")
    old_schema = {"type": "record", "name": "Metric", "namespace": "reshaper.events",
                  "fields": [f for f in current["fields"] if f["name"] != "labels"]}
    old = Codec()
    CODEC.register(old_schema, current=False)  # this process may read it, never writes it
    old.register(old_schema)
    with EventProducer(kafka_bootstrap) as producer:
        _metrics(producer, tag, 30)
        good = CODEC.encode("Metric", {"event_id": f"{tag}-x", "created_at_ms": 1, "source": tag, "step": 99,
                                       "values": {}, "labels": {}})
        producer.send_raw(METRICS, tag, good[:HEADER_LEN + 3])  # valid header, truncated body
        _metrics(producer, tag, 30)
        producer.send_raw(METRICS, tag, old.encode("Metric", {"event_id": f"{tag}-old", "schema_version": 1,
                                                                "created_at_ms": 5, "source": tag + "-old",
                                                                "step": 1, "config_id": "", "values": {"v": 2.0}}))
    # the group starts after the other tests' metrics, and every record of this test is in one batch
    group = f"g-{tag}"
    _commit_at_end(kafka_bootstrap, group, METRICS, before=62)
    with ChdbStore(tmp_path / "chdb") as store:
        sink = Sink(SinkConfig(only=[METRICS], group_id=group, batch_rows=100_000, batch_seconds=60),
                    kafka_bootstrap, store=store)
        _sink_until_idle(sink)
        sink.consumer.close()
        final = store.query("SELECT count(), uniqExact(event_id) FROM metrics WHERE source = {t:String}",
                            {"t": tag}).rows[0]
        old_row = store.query("SELECT step, labels, values FROM metrics WHERE source = {t:String}",
                              {"t": tag + "-old"}).rows
        assert sink.stats.decoded_here == 61  # the refused file's good records, and the old-schema one
    assert tuple(final) == (60, 60)
    assert old_row == [(1, {}, {"v": 2.0})]
    assert sink.stats.dead_lettered == 1
