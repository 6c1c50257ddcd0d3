"""SIGKILL the reshape worker mid-stream, restart it: no advantage lost, none changed, the
same table state as an uninterrupted run -- also when the group's committed offset is
moved past the stored state before the restart (records Faust would skip).

Feedback events are injected directly (no feedback agent), so the sandbox is not the
bottleneck and the stream is long enough to kill mid-way. Small batches make the kill land
between many state writes.
"""

import json
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from infra.platform.kafka_io import EventProducer
from streams.agents.processor import new_reshaper
from streams.app import ensure_app_topics
from streams.reshaping.config import PRESETS_DIR, load_preset
from tests.streams.helpers import WorkerProcess, feedback, isolated_settings, read_all, unique

GROUPS, SIZE = 1250, 4  # 5,000 rollouts


def last_values(bootstrap, topic):
    """Newest value per key of a changelog topic, decoded from Faust's JSON."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("changelog"),
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values, idle = {}, 0
    while idle < 4:
        msgs = [m for m in consumer.consume(1000, 0.5) if m.error() is None]
        idle = 0 if msgs else idle + 1
        for m in msgs:
            values[json.loads(m.key())] = json.loads(m.value())
    consumer.close()
    return values


def move_committed_offsets(bootstrap, group_id, topic, partitions, ahead):
    """Commit offsets ``ahead`` records past the group's own: as if the committed offset ran
    ahead of the stored state. Retried until the killed worker has left the group."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id, "enable.auto.commit": False})
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        deadline = time.monotonic() + 60
        while True:
            committed = consumer.committed(tps, timeout=10)
            moved = [TopicPartition(topic, tp.partition, max(tp.offset, 0) + ahead) for tp in committed]
            try:
                consumer.commit(offsets=moved, asynchronous=False)
                print(f"committed offsets moved from {[tp.offset for tp in committed]} "
                      f"to {[tp.offset for tp in moved]}")
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
    finally:
        consumer.close()


@pytest.mark.parametrize("ahead", [0, 120], ids=["plain-restart", "committed-offset-ahead-of-state"])
def test_sigkill_mid_stream_loses_and_doubles_nothing(kafka_bootstrap, kafka_admin, tmp_path, ahead):
    cfg = load_preset("full")
    settings = isolated_settings(agents=("reshape",), batch_max_events=50)
    app_id = unique("crash")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    passes = [0.0, 0.25, 0.5, 1.0, 0.75]
    with EventProducer(kafka_bootstrap) as producer:
        for g in range(GROUPS):
            for i in range(SIZE):
                fb = feedback(f"g{g}", i, SIZE, passes[(g * 3 + i) % 5], pattern=f"p{g % 7}",
                              created_at_ms=1_700_000_000_000 + g * 10, fixed=passes[(g * 3 + i) % 5] == 1.0)
                producer.send(settings.topics.feedback, fb["group_id"], "Feedback", fb)

    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    topic = settings.topics.advantages(cfg.config_id)
    seen = read_all(kafka_bootstrap, topic, 1500, timeout_s=120, proc=worker, stop_at_want=True)
    worker.kill()
    killed_at = len(seen)
    if ahead:
        move_committed_offsets(kafka_bootstrap, app_id, settings.topics.feedback, settings.partitions, ahead)
    worker.start()
    try:
        out = read_all(kafka_bootstrap, topic, GROUPS * SIZE, timeout_s=240, settle_s=3, proc=worker,
                       distinct="rollout_id")
        time.sleep(1)  # let the last state write land in the changelog
    finally:
        worker.stop()

    counts = Counter(a["rollout_id"] for a in out)
    expected_ids = {f"g{g}-r{i}" for g in range(GROUPS) for i in range(SIZE)}
    copies = sum(c - 1 for c in counts.values() if c > 1)
    gaps = len(expected_ids - set(counts))
    # a re-emitted advantage must be the same event: same id and the very same values
    firsts, conflicting = {}, 0
    for a in out:
        first = firsts.setdefault(a["rollout_id"], a)
        conflicting += a != first
    print(f"killed after {killed_at} advantages: {copies} identical re-emissions, "
          f"{conflicting} conflicting, {gaps} gaps, {len(firsts)} distinct of {len(expected_ids)}")
    assert 0 < killed_at < GROUPS * SIZE, f"kill did not land mid-stream ({killed_at})"
    assert gaps == 0 and conflicting == 0 and set(firsts) == expected_ids
    # only what was delivered after the last stored state is sent again: a batch or two
    assert copies <= 2 * settings.batch_max_events * settings.partitions
    out = list(firsts.values())

    # the uninterrupted run: the same partitions, in log order, through a fresh reshaper
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": unique("truth"),
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([settings.topics.feedback])
    from schemas.codec import CODEC
    reshapers, expected, idle = {}, {}, 0
    while idle < 4:
        msgs = [m for m in consumer.consume(1000, 0.5) if m.error() is None]
        idle = 0 if msgs else idle + 1
        for m in msgs:
            proc = reshapers.setdefault(m.partition(), new_reshaper(cfg, settings, m.partition()))
            for rec in proc.on_feedback(CODEC.decode(m.value()), m.offset(), m.timestamp()[1]).advantages:
                expected[rec["rollout_id"]] = rec
    consumer.close()
    assert set(expected) == {a["rollout_id"] for a in out}
    for a in out:  # float32 on the wire
        assert abs(a["advantage"] - expected[a["rollout_id"]]["advantage"]) < 1e-6

    stored = last_values(kafka_bootstrap, f"{app_id}-reshape-state-changelog")
    for partition, proc in reshapers.items():
        want, got = proc.to_dict(), stored[partition]
        # the buffer clock also follows the timer's ticks (wall time), so it is left out
        want["buffer"].pop("clock_ms"), got["buffer"].pop("clock_ms")
        assert got == want
