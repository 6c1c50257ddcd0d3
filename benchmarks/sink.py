"""Store throughput: the Kafka sink against a raw chDB insert, and drift query times.

    python benchmarks/sink.py [--sink-rows 50000] [--rows 1000000] [--skip-sink] [--skip-drift]

Part 1, sink: N full Feedback events (5 test outcomes, 64 prompt and 64 completion
tokens) with a fresh evaluator_version tag are produced to the real `feedback` topic
(the sink routes by topic name), and `consumers.sink.Sink` stores them in a temporary
chDB. A fresh consumer group is first committed at the topic's current end, so the sink
reads only this run's events, not the topic's history. Sink rows/s runs from the first
event polled to the last batch stored (group join excluded). The same rows, with the
same batch size, then go straight into `store.insert` (decoded dicts, Native format) on the
emptied table: the ratio sink / raw is what Kafka polling, the sink's own insert path
(Avro container files that ClickHouse decodes) and commits cost against that (goal >= 0.5);
the time of decoding the same N values in Python, the step the sink no longer takes, is
printed beside it.
Needs a broker at RESHAPER_BOOTSTRAP (default 127.0.0.1:39092); nothing is started.

Part 2, drift: --rows Feedback rows (16 tokens each) over 20 policy versions, 4 bug
patterns and 2 hours, advantages for two configs on the same rollouts, and learner and
eval metrics, inserted directly; then every drift query is timed on that store.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from consumers.drift.queries import bind_parameters, load_query, query_names  # noqa: E402
from consumers.store import ChdbStore  # noqa: E402
from schemas.codec import CODEC  # noqa: E402
from schemas.records import build_record  # noqa: E402

T0_MS = 1_700_000_040_000
SPAN_MS = 2 * 3600 * 1000
PATTERNS = ("off_by_one", "wrong_operator", "swapped_args", "missing_return")
VERSIONS = 20
CHUNK = 50_000  # rows generated and inserted at a time: bounds memory for 1M rows


def feedback_record(i: int, n: int, rng: random.Random, tag: str, tokens: int) -> dict:
    version = i * VERSIONS // n
    # success improves with the version, so the drift queries have a trend to find
    passed = [rng.random() < 0.3 + 0.02 * version for _ in range(5)]
    return build_record(
        "Feedback", event_id=f"{tag}-{i}", created_at_ms=T0_MS + i * SPAN_MS // n, rollout_id=f"{tag}-r{i}",
        group_id=f"{tag}-g{i // 8}", task_id=f"t{(i // 8) % 500}", bug_pattern=PATTERNS[(i // 8) % len(PATTERNS)],
        difficulty=0.5, sample_index=i % 8, group_size=8, policy_version=version, evaluator_version=tag, repeats=1,
        tests_total=5, tests_passed=sum(passed), pass_fraction_runs=[sum(passed) / 5],
        test_outcomes=[{"index": k, "passed": ok, "error_kind": "none" if ok else "wrong_answer",
                        "runtime_ms": 1.0} for k, ok in enumerate(passed)],
        error_kind="none" if all(passed) else "wrong_answer", runtime_ms=12.5, tree_edit_distance=rng.random(),
        tree_edit_distance_raw=3, style_class="clean",
        hack_flags=["swallowed_exception"] if rng.random() < 0.05 else [], cyclomatic_complexity=2,
        adversarial_checked=16, prompt_token_ids=list(range(tokens)), completion_token_ids=list(range(tokens)),
        behaviour_logprobs=[-0.5] * tokens, finish_reason="stop", completion_text="def f(x):\n    return x\n")


def advantage_record(fb: dict, config_id: str, rng: random.Random) -> dict:
    raw = fb["tests_passed"] / 5
    floats = dict.fromkeys(["ema_baseline", "global_mean", "global_std", "group_mean", "group_std"], 0.0)
    advantage = 0.0 if raw in (0.0, 1.0) else rng.gauss(0, 1)
    return build_record(
        "Advantage", **floats, event_id=f"{fb['event_id']}-{config_id}", created_at_ms=fb["created_at_ms"] + 5,
        config_id=config_id, rollout_id=fb["rollout_id"], feedback_event_id=fb["event_id"], group_id=fb["group_id"],
        task_id=fb["task_id"], bug_pattern=fb["bug_pattern"], sample_index=fb["sample_index"], group_size=8,
        group_members=8, group_complete=True, policy_version=fb["policy_version"], reward_raw=raw,
        components={"test": raw, "precision": 0.0, "style": 0.0, "hack": 0.0, "progress": 0.0},
        weights={"test": 1.0, "precision": 0.0, "style": 0.0, "hack": 0.0, "progress": 0.0}, reward_enhanced=raw + (0.1 if config_id == "b" else 0.0), reward_normalised=advantage,
        advantage=advantage, global_count=1000, warmup=False, hack_flags=fb["hack_flags"],
        prompt_token_ids=fb["prompt_token_ids"], completion_token_ids=fb["completion_token_ids"],
        behaviour_logprobs=fb["behaviour_logprobs"], finish_reason="stop")


def metric_records(tag: str) -> list[dict]:
    rows = []
    for step in range(2000):
        rows.append(build_record("Metric", event_id=f"{tag}-l{step}", created_at_ms=T0_MS + step * 3600,
                                 source="learner", step=step, config_id="a",
                                 values={"loss/kl_ref": 0.01, "grad_norm": 1.0, "lag_mean": 1.0}))
    for version in range(VERSIONS):
        rows.append(build_record("Metric", event_id=f"{tag}-e{version}", created_at_ms=T0_MS + version,
                                 source="eval", step=version, config_id="a", values={"success_at_1": 0.3},
                                 labels={"policy_version": str(version)}))
    return rows


class TimedStore(ChdbStore):
    """A chDB store that adds up the time spent in its inserts, to split the sink's time."""

    insert_s = 0.0

    def insert(self, table, rows):
        start = time.perf_counter()
        try:
            return super().insert(table, rows)
        finally:
            self.insert_s += time.perf_counter() - start

    def insert_container(self, table, columns, data):
        start = time.perf_counter()
        try:
            return super().insert_container(table, columns, data)
        finally:
            self.insert_s += time.perf_counter() - start


def bench_sink(n: int, batch_rows: int) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    from consumers.sink import Sink, SinkConfig
    from infra.platform.kafka_io import EventProducer, consumer_config
    from infra.platform.settings import bootstrap_servers
    from infra.platform.topics import Topics, ensure_topics

    bootstrap = bootstrap_servers()
    ensure_topics(AdminClient({"bootstrap.servers": bootstrap}), Topics().event_specs())
    tag = f"sinkbench-{uuid.uuid4().hex[:8]}"
    group = f"bench-{tag}"
    # start the fresh group at today's end of the topic: the sink reads only this run's events
    probe = Consumer(consumer_config(group, bootstrap))
    topic = Topics().feedback
    partitions = probe.list_topics(topic, timeout=10).topics[topic].partitions
    ends = [TopicPartition(topic, p, probe.get_watermark_offsets(TopicPartition(topic, p), 10)[1])
            for p in partitions]
    probe.commit(offsets=ends, asynchronous=False)
    probe.close()

    rng = random.Random(0)
    records = [feedback_record(i, n, rng, tag, 64) for i in range(n)]
    start = time.perf_counter()
    with EventProducer(bootstrap) as producer:
        for record in records:
            producer.send(topic, record["group_id"], "Feedback", record)
    print(f"produced {n} feedback events in {time.perf_counter() - start:.1f}s")

    count_sql = "SELECT count() FROM feedback FINAL WHERE evaluator_version = {tag:String}"
    with tempfile.TemporaryDirectory() as path, TimedStore(path) as store:
        sink = Sink(SinkConfig(only=[topic], group_id=group, batch_rows=batch_rows), bootstrap, store=store)
        first = None
        deadline = time.monotonic() + 600
        stored = 0
        while stored < n and time.monotonic() < deadline:
            got = sink.poll_once()
            if got and first is None:
                first = time.perf_counter()
            if sink.stats.rows["feedback"] >= n:
                stored = store.query(count_sql, {"tag": tag}).rows[0][0]
        sink.flush()
        elapsed = time.perf_counter() - first
        sink.consumer.close()
        sink_rate = stored / elapsed
        print(f"sink: {stored} rows in {elapsed:.2f}s = {sink_rate:,.0f} rows/s (batches of {batch_rows});"
              f" {store.insert_s:.2f}s of it in the store's inserts, {sink.stats.decoded_here} rows decoded in Python")

        store.command("TRUNCATE TABLE feedback")
        rows = [{**r, "_topic": "feedback", "_partition": 0, "_offset": i} for i, r in enumerate(records)]
        start = time.perf_counter()
        for at in range(0, n, batch_rows):
            store.insert("feedback", rows[at:at + batch_rows])
        raw_elapsed = time.perf_counter() - start
        raw_stored = store.query(count_sql, {"tag": tag}).rows[0][0]
        raw_rate = raw_stored / raw_elapsed
        print(f"raw store.insert: {raw_stored} rows in {raw_elapsed:.2f}s = {raw_rate:,.0f} rows/s")
    print(f"sink / raw = {sink_rate / raw_rate:.2f} (goal >= 0.5)")
    # what decoding in Python would cost (the sink's path before container files)
    encoded = [CODEC.encode("Feedback", r) for r in records]
    start = time.perf_counter()
    for value in encoded:
        CODEC.decode(value)
    decode_elapsed = time.perf_counter() - start
    print(f"Avro decode in Python alone: {n / decode_elapsed:,.0f} rows/s ({decode_elapsed:.2f}s; the sink took {elapsed:.2f}s)")


def bench_drift(n: int, repeats: int) -> None:
    rng = random.Random(1)
    tag = "drift"
    with tempfile.TemporaryDirectory() as path, ChdbStore(path) as store:
        store.init_schema()
        start = time.perf_counter()
        for at in range(0, n, CHUNK):
            feedback = [feedback_record(i, n, rng, tag, 16) for i in range(at, min(n, at + CHUNK))]
            store.insert("feedback", feedback)
            for config_id in ("a", "b"):
                store.insert("advantages", [advantage_record(fb, config_id, rng) for fb in feedback])
        store.insert("metrics", metric_records(tag))
        print(f"loaded {n} feedback + {2 * n} advantage rows in {time.perf_counter() - start:.1f}s")
        for name in query_names():
            query = load_query(name)
            params = bind_parameters(query, None, "a", "b", 60)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                result = store.query(query.sql, params)
                times.append(time.perf_counter() - start)
            print(f"  {name:<18} {min(times):7.2f}s (best of {repeats}, {len(result.rows)} rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sink-rows", type=int, default=50_000, help="feedback events through Kafka and the sink")
    parser.add_argument("--batch-rows", type=int, default=5_000, help="sink batch size, also the raw insert batch")
    parser.add_argument("--rows", type=int, default=1_000_000, help="feedback rows for the drift query timings")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each drift query (best is reported)")
    parser.add_argument("--skip-sink", action="store_true")
    parser.add_argument("--skip-drift", action="store_true")
    args = parser.parse_args()
    # chDB runs one data path per process, and each part opens its own: one after the other
    if not args.skip_sink:
        bench_sink(args.sink_rows, args.batch_rows)
    if not args.skip_drift:
        bench_drift(args.rows, args.repeats)


if __name__ == "__main__":
    main()
