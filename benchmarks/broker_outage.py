"""The loop's rollouts/min on its own three-node cluster, with all nodes up against one node down.

    python benchmarks/broker_outage.py [--window-s 90] [--model tiny]

One `reshaper run` (the tiny model by default, many steps) on a cluster of its own. After its
first policy version it is measured for `--window-s` with every node up (the baseline), then
the node leading the most rollout and feedback partitions is SIGKILLed and the same window is
measured with it down, then the node is started again and the window measured once more. The
rate of a window is the growth of the rollouts topic's end offsets over it. The run is then
stopped as Ctrl-C stops it (nothing is lost) and its row counts are printed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402

from infra.compose.orchestrator import Orchestrator  # noqa: E402
from infra.compose.run_config import RunConfig  # noqa: E402


def end_offsets(probe: Consumer, topic: str) -> int:
    partitions = probe.list_topics(topic, timeout=10).topics[topic].partitions
    return sum(probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions)


def rollouts_written(bootstrap: str, topic: str, tries: int = 60) -> int:
    """The topic's end offsets summed; asked again while a killed leader's partitions elect another."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "outage-probe"})  # end offsets only
    try:
        for _ in range(tries - 1):
            try:
                return end_offsets(probe, topic)
            except KafkaException:
                time.sleep(1)
        return end_offsets(probe, topic)
    finally:
        probe.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window-s", type=float, default=90.0, help="length of each measured window")
    parser.add_argument("--model", default="tiny", help="the run's model (tiny, smollm2)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="broker-outage-"))
    cfg = RunConfig(name="outage", runs_dir=runs, model=args.model, steps=100_000, brokers=3, max_functions=10,
                    group_size=2, max_new_tokens=args.max_new_tokens, groups_per_step=1, tensorboard=False)
    orchestrator = Orchestrator(cfg)
    windows: dict[str, float] = {}

    def window(name: str, bootstrap: str, topic: str) -> None:
        before, t0 = rollouts_written(bootstrap, topic), time.monotonic()
        time.sleep(args.window_s)
        windows[name] = (rollouts_written(bootstrap, topic) - before) / ((time.monotonic() - t0) / 60)
        print(f"{name}: {windows[name]:.1f} rollouts/min", flush=True)

    def measure() -> None:
        try:
            while not list((cfg.run_dir / "policy").glob("v-*")):
                time.sleep(0.5)
            cluster, topics = orchestrator.own_broker, orchestrator.cfg.topics
            window("all three nodes up", cluster.bootstrap, topics.rollouts)
            node = cluster.busiest_leader([topics.rollouts, topics.feedback])
            cluster.nodes[node - 1].kill()
            window(f"node {node} down", cluster.bootstrap, topics.rollouts)
            t0 = time.monotonic()
            cluster.start_node(node - 1)
            print(f"node {node} answered again {time.monotonic() - t0:.1f} s after its start", flush=True)
            window(f"node {node} back", cluster.bootstrap, topics.rollouts)
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # the run stops as on Ctrl-C

    # Python leaves SIGINT ignored when it starts so (a job started in the background by a
    # shell, or under nohup): the stop above would then never reach the run
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=measure, daemon=True).start()
    summary = orchestrator.run(progress=False)
    names = list(windows)
    for name in names[1:]:
        print(f"{name}: x{windows[name] / windows[names[0]]:.2f} of {names[0]}")
    print(f"restarts {summary['restarts']}; rollouts {summary['rollouts']}; learner steps {summary['learner_steps']}; "
          f"run folder {cfg.run_dir}")


if __name__ == "__main__":
    main()
