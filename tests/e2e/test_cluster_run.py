"""`reshaper run` on its own three-node cluster, with the broker that leads the most rollout and
feedback partitions SIGKILLed after the first learner step and started again after the next (the
learner held meanwhile, so the run is still on when it rejoins): the run finishes, every rollout
has exactly one feedback and one advantage, no component was restarted, and nothing is
dead-lettered."""

import os
import signal
import threading
import time

import pytest

from infra.compose.orchestrator import Orchestrator
from infra.compose.run_config import RunConfig
from infra.platform.broker import KafkaCluster
from infra.platform.kafka_io import read_topic
from infra.platform.settings import ClusterSettings
from tests.e2e.stored import learner_read_of_run, read_without_gaps, stored_counts

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own cluster

STEPS = 8


@pytest.fixture(scope="module")
def broker_killed_run(tmp_path_factory):
    cfg = RunConfig(name="e2e-cluster", runs_dir=tmp_path_factory.mktemp("runs"), model="tiny", steps=STEPS, brokers=3,
                    max_functions=10, group_size=2, max_new_tokens=16, groups_per_step=1,
                    generator={"max_inflight_groups": 4}, learner={"learning_rate": 1e-3})
    orchestrator = Orchestrator(cfg)
    fault: dict = {}

    def versions() -> int:
        return len(list((cfg.run_dir / "policy").glob("v-*")))

    def killer() -> None:
        deadline = time.monotonic() + 1200
        while versions() < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        cluster = orchestrator.own_broker
        names = orchestrator.cfg.topics
        node = cluster.busiest_leader([names.rollouts, names.feedback])
        at = versions()
        t0 = time.monotonic()
        cluster.nodes[node - 1].kill()
        fault.update(node=node, at_version=at)
        # the loop goes on without it: a new policy version while the node is down
        while versions() <= at and time.monotonic() < deadline:
            time.sleep(0.2)
        fault["next_version_s"] = round(time.monotonic() - t0, 1)
        # the learner is held while the node starts again, so the run cannot end (and stop its
        # cluster) before the node has rejoined
        learner = orchestrator.learner.proc.pid
        os.kill(learner, signal.SIGSTOP)
        try:
            fault["held_at_version"] = versions()
            t1 = time.monotonic()
            cluster.start_node(node - 1)
            fault["rejoin_s"] = round(time.monotonic() - t1, 1)
        finally:
            os.kill(learner, signal.SIGCONT)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    summary = orchestrator.run(progress=False)
    thread.join(timeout=120)
    cfg = orchestrator.cfg
    cluster = KafkaCluster(ClusterSettings(brokers=3, port=cfg.kafka_port, home=cfg.run_dir / "kafka"))
    cluster.up()  # started again on the run's data, to read its topics
    yield cfg, summary, cluster.bootstrap, fault
    cluster.down()


def test_a_broker_killed_mid_run_loses_nothing(broker_killed_run):
    cfg, summary, bootstrap, fault = broker_killed_run
    assert {"node", "next_version_s", "rejoin_s"} <= set(fault), fault
    assert fault["held_at_version"] < STEPS, fault  # the node rejoined while the run went on
    assert summary["learner_steps"] == STEPS and summary["policy_version"] == STEPS
    # every client rides out the lost node (a commit waits for the group's new coordinator)
    assert not any(summary["restarts"].values()), summary["restarts"]
    config_id = summary["config_id"]
    counts, dead = stored_counts(cfg.run_dir, config_id)
    print(f"fault {fault}; restarts {summary['restarts']}; rows (all, distinct ids) {counts}")
    distinct = {table: d for table, (_, d) in counts.items()}
    assert distinct["rollouts"] == distinct["feedback"] == distinct["advantages"] > 0, counts
    # a retried write may land twice in a topic: then only with the same id and the same value
    events = read_topic(cfg.topics.rollouts, bootstrap)
    by_id: dict[str, dict] = {}
    for event in events:
        assert by_id.setdefault(event.record["rollout_id"], event.record) == event.record
    assert len(by_id) == distinct["rollouts"]
    assert dead == 0
    audit = learner_read_of_run(cfg, config_id, bootstrap)
    print(f"learner read {audit}")
    assert read_without_gaps(audit), audit
