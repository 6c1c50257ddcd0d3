"""Feedback events/s of one Faust worker against two, on a local three-node cluster.

    python benchmarks/cluster_workers.py [--rollouts N] [--workers 1 2] [--sandbox-workers 1]

Starts its own cluster (three KRaft nodes on free loopback ports, topics replicated three
times with two in sync, in a temporary folder). For each worker count in turn, in a topic
namespace of its own: one task is published, the workers of one app id start and join their
consumer group, then N rollouts of it (groups of four candidates: right, wrong, half right,
not Python) are published, and the rate is counted on the feedback topic's end offsets from its first record
to its N-th, so start-up is left out and the real evaluator runs every candidate in the
sandbox. The first count is the baseline of the ratio.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ["RESHAPER_KAFKA_BROKERS"] = "3"  # topic specs and the workers' Faust app: replicated three times

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from infra.platform.broker import KafkaCluster, _port_open  # noqa: E402
from infra.platform.kafka_io import EventProducer, read_topic  # noqa: E402
from infra.platform.settings import ClusterSettings  # noqa: E402
from infra.platform.topics import Topics  # noqa: E402
from schemas.records import build_record  # noqa: E402
from streams.app import ensure_app_topics  # noqa: E402
from streams.reshaping.config import PRESETS_DIR, load_preset  # noqa: E402
from streams.settings import StreamSettings  # noqa: E402

REFERENCE = "def add(a, b):\n    return a + b\n"
CANDIDATES = [REFERENCE, "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b if b != 0 else 0\n",
              "def add(a, b) return"]
TESTS = ["assert add(1, 1) == 2", "assert add(2, 0) == 2", "assert add(0, 3) == 3", "assert add(2, 2) == 4"]
PARTITIONS = 4


def free_port(start: int = 31000) -> int:
    """The first port with the five above it free (three nodes and their controllers)."""
    for port in range(start, start + 400, 2):
        if not any(_port_open("127.0.0.1", p) for p in range(port, port + 6)):
            return port
    raise RuntimeError("no free ports for the cluster")


def publish_task(bootstrap: str, topics: Topics) -> None:
    """The one task, on the log before the workers start, as `reshaper run` publishes a cached corpus."""
    task = build_record("Task", event_id=uuid.uuid4().hex, created_at_ms=int(time.time() * 1000), task_id="t-add",
                        function_id="add", source="custom", split="train", entry_point="add",
                        reference_code=REFERENCE, buggy_code=CANDIDATES[1], tests=TESTS, bug_pattern="operator_swap",
                        difficulty=0.2)
    with EventProducer(bootstrap) as producer:
        producer.send(topics.tasks, "t-add", "Task", task)


def publish_rollouts(bootstrap: str, topics: Topics, rollouts: int) -> None:
    now = int(time.time() * 1000)
    with EventProducer(bootstrap) as producer:
        for n in range(rollouts):
            group, index = f"g{n // len(CANDIDATES)}", n % len(CANDIDATES)
            producer.send(topics.rollouts, group, "Rollout", build_record(
                "Rollout", event_id=uuid.uuid4().hex, created_at_ms=now + n, rollout_id=f"{group}-{index}",
                group_id=group, task_id="t-add", sample_index=index, group_size=len(CANDIDATES), policy_version=0,
                generator_id="bench", prompt_template_version="v1", prompt_token_ids=[1, 2],
                completion_token_ids=[3, 4], behaviour_logprobs=[-0.1, -0.2], completion_text=CANDIDATES[index],
                finish_reason="stop", temperature=1.0, max_new_tokens=64))


def group_members(admin: AdminClient, group: str) -> int:
    """Members of a consumer group once it is stable (0 while it rebalances, or while a fresh
    cluster's group coordinator is still loading and does not answer)."""
    try:
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
    except Exception:  # a timeout or KafkaException: asked again a second later
        return 0
    return len(described.members) if str(described.state).endswith("STABLE") else 0


def end_offsets(probe: Consumer, topic: str) -> int:
    return sum(probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS))


def outcomes(bootstrap: str, topic: str) -> dict[str, int]:
    """Rollouts by the outcome of their feedback: every candidate evaluated (`wrong_answer`,
    `syntax`, `none`), none an environment failure (a task that did not reach the worker in
    time, a sandbox error); `copies`: records of a rollout already counted (a rollout a worker
    evaluated again after a rebalance, as at-least-once delivery allows)."""
    from collections import Counter

    first: dict[str, dict] = {}
    copies = 0
    for event in read_topic(topic, bootstrap):
        copies += event.record["rollout_id"] in first
        first.setdefault(event.record["rollout_id"], event.record)
    counts = Counter("environment_failure" if r["environment_failure"] else r["error_kind"] for r in first.values())
    return dict(counts, copies=copies)


def feedback_rate(bootstrap: str, tmp: Path, workers: int, rollouts: int, sandbox_workers: int,
                  standby_replicas: int | None, loglevel: str = "warning",
                  timeout_s: float = 300.0) -> tuple[float, dict[str, int]]:
    cfg = load_preset("full")
    tag = uuid.uuid4().hex[:6]
    app_id = f"bench-{workers}w-{tag}"
    settings = StreamSettings(topics=Topics(prefix=f"bench-{workers}w-{tag}."), partitions=PARTITIONS,
                              sandbox_workers=sandbox_workers, task_wait_s=60.0,
                              standby_replicas=(1 if workers > 1 else 0) if standby_replicas is None
                              else standby_replicas)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ensure_app_topics(admin, app_id, cfg, settings)
    publish_task(bootstrap, settings.topics)
    settings_file = tmp / f"{app_id}.json"
    settings_file.write_text(settings.model_dump_json())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-m", "streams.cli", "worker", "--config", str(PRESETS_DIR / "full.yaml"),
                               "--app-id", app_id, "--settings", str(settings_file),
                               "--data-dir", str(tmp / f"{app_id}-{i}"), "--bootstrap", bootstrap,
                               "--loglevel", loglevel],
                              cwd=REPO, env=env, stdout=(tmp / f"{app_id}-{i}.log").open("ab"), stderr=subprocess.STDOUT)
             for i in range(workers)]
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{tag}"})  # reads end offsets only
    try:
        deadline = time.monotonic() + 300
        while group_members(admin, app_id) < workers:  # every worker holds its partitions
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"{workers} workers did not join group {app_id}; logs in {tmp}")
            time.sleep(1)
        publish_rollouts(bootstrap, settings.topics, rollouts)
        first, deadline = None, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            n = end_offsets(probe, settings.topics.feedback)
            if n and first is None:
                first = (time.monotonic(), n)
            if n >= rollouts:
                rate = (n - first[1]) / max(time.monotonic() - first[0], 1e-9)
                return rate, outcomes(bootstrap, settings.topics.feedback)
            time.sleep(0.2)
        per_partition = [probe.get_watermark_offsets(TopicPartition(settings.topics.feedback, p), timeout=10)[1]
                         for p in range(PARTITIONS)]
        raise TimeoutError(f"{workers} workers: {sum(per_partition)} of {rollouts} feedback records after {timeout_s} s "
                           f"(by partition {per_partition}); logs in {tmp}")
    finally:
        probe.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=200, help="rollouts evaluated per worker count")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts; the first is the baseline")
    parser.add_argument("--sandbox-workers", type=int, default=1, help="warm sandbox processes of each worker")
    parser.add_argument("--standby-replicas", type=int, default=None,
                        help="standby replicas of the workers' tables; default as a run sets them: 1 with several workers")
    parser.add_argument("--loglevel", default="warning", help="log level of the workers (logs in the temp folder)")
    parser.add_argument("--timeout-s", type=float, default=300.0,
                        help="give up on a worker count this long after its rollouts are published")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the workers and the cluster
    tmp = Path(tempfile.mkdtemp(prefix="cluster-workers-"))
    cluster = KafkaCluster(ClusterSettings(brokers=3, port=free_port(), home=tmp / "kafka"))
    cluster.up()
    rates: dict[int, float] = {}
    try:
        for workers in args.workers:  # each line printed as measured
            rate, kinds = feedback_rate(cluster.bootstrap, tmp, workers, args.rollouts, args.sandbox_workers,
                                        args.standby_replicas, args.loglevel, args.timeout_s)
            rates[workers] = rate
            base = args.workers[0]
            print(f"{workers} worker{'s' if workers > 1 else ''} ({args.sandbox_workers} sandbox each), 3-node "
                  f"cluster: {args.rollouts} feedback events at {rate:.1f} events/s, x{rate / rates[base]:.2f} of "
                  f"{base}; outcomes {kinds}", flush=True)
    finally:
        cluster.down()


if __name__ == "__main__":
    main()
