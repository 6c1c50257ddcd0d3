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
from infra.kafka_io import EventProducer

pytestmark = pytest.mark.kafka


def _metrics(producer: EventProducer, tag: str, n: int) -> None:
    for i in range(n):
        producer.send("metrics", tag, "Metric", {"source": tag, "step": i, "config_id": "", "values": {"v": float(i)},
                                                 "labels": {}})


def _count(store_path, tag: str) -> tuple[int, int, int]:
    with open_store(str(store_path)) as store:
        final = store.query("SELECT count() FROM metrics FINAL WHERE source = {t:String}", {"t": tag}).rows[0][0]
        distinct = store.query("SELECT uniqExact(event_id) FROM metrics WHERE source = {t:String}", {"t": tag}).rows[0][0]
        plain = store.query("SELECT count() FROM metrics WHERE source = {t:String}", {"t": tag}).rows[0][0]
    return final, distinct, plain


def _sink_cmd(store_path, group, *extra):
    return [sys.executable, "-m", "infra.cli", "sink", "--store", str(store_path), "--group-id", group, *extra]


def test_sink_stores_every_event_once_and_dead_letters_poison(kafka_bootstrap, kafka_admin, tmp_path):
    from infra.topics import ensure_topics, event_topics

    ensure_topics(kafka_admin, event_topics())
    tag = f"sink-{uuid.uuid4().hex[:8]}"
    with EventProducer(kafka_bootstrap) as producer:
        _metrics(producer, tag, 500)
        producer.flush()
        raw = Producer({"bootstrap.servers": kafka_bootstrap})
        raw.produce("metrics", key=tag.encode(), value=b"\x00 not avro " + tag.encode())
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
    from infra.topics import ensure_topics, event_topics

    ensure_topics(kafka_admin, event_topics())
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
        offs = probe.committed([TopicPartition("metrics", 0)], timeout=5)
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
