"""`reshaper run` on its own three-node cluster with two Faust workers and two generators: one
worker SIGKILLed after the first learner step, one generator after the next. The run's
supervision restarts both; the run finishes with every rollout of both generators fed back and
reshaped exactly once by distinct id, duplicates in a topic only as identical copies (counted),
and nothing dead-lettered."""

import os
import signal
import threading
import time
from collections import Counter

import pytest

from consumers.store import open_store
from infra.compose.orchestrator import Component, Orchestrator
from infra.compose.run_config import RunConfig
from infra.compose.run_history import generator_id
from infra.platform.broker import KafkaCluster
from infra.platform.kafka_io import read_topic
from infra.platform.settings import ClusterSettings
from tests.e2e.stored import learner_read_of_run, read_without_gaps, stored_counts

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own cluster

STEPS = 6
NAME = "e2e-scale"


def without(value, ignore: frozenset[str]):
    """`value` with the keys in `ignore` left out at every depth."""
    if isinstance(value, dict):
        return {k: without(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [without(v, ignore) for v in value]
    return value


def duplicates(events, key: str, ignore: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(records beyond the first of an id, of those how many differ from the first outside `ignore`)."""
    first: dict[str, dict] = {}
    extra = differing = 0
    for event in events:
        record = without(event.record, ignore)
        seen = first.setdefault(event.record[key], record)
        if seen is not record:
            extra += 1
            differing += seen != record
    return extra, differing


def not_passed_on(inputs, outputs) -> list[tuple[int, int, str]]:
    """(partition, offset, group id) of the input records whose rollout has no output record."""
    done = {e.record["rollout_id"] for e in outputs}
    return [(e.partition, e.offset, e.record["group_id"]) for e in inputs if e.record["rollout_id"] not in done]


@pytest.fixture(scope="module")
def scaled_run(tmp_path_factory):
    cfg = RunConfig(name=NAME, runs_dir=tmp_path_factory.mktemp("runs"), model="tiny", steps=STEPS, brokers=3,
                    workers=2, generators=2, max_functions=10, group_size=2, max_new_tokens=16, groups_per_step=2,
                    sandbox_workers=1, tensorboard=False, evaluator={"repeats": 1},
                    generator={"max_inflight_groups": 4}, learner={"learning_rate": 1e-3})
    orchestrator = Orchestrator(cfg)
    faults: dict = {}

    def versions() -> int:
        return len(list((cfg.run_dir / "policy").glob("v-*")))

    def kill(comp: Component, deadline: float) -> dict:
        """SIGKILL `comp`; how long until the run restarted it and until the next policy version."""
        at, pid, t0 = versions(), comp.proc.pid, time.monotonic()
        os.kill(pid, signal.SIGKILL)
        fault = {"at_version": at}
        while comp.proc.pid == pid and time.monotonic() < deadline:
            time.sleep(0.1)
        if comp.proc.pid != pid:
            fault["restarted_s"] = round(time.monotonic() - t0, 1)
        while versions() <= at and time.monotonic() < deadline:
            time.sleep(0.2)
        if versions() > at:
            fault["next_version_s"] = round(time.monotonic() - t0, 1)
        return fault

    def killer() -> None:
        deadline = time.monotonic() + 600
        while versions() < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        faults["worker"] = kill(orchestrator.workers[0], deadline)
        if versions() < STEPS:  # the run may end before a second fault
            faults["generator"] = kill(orchestrator.generators[1], deadline)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    started = time.monotonic()
    summary = orchestrator.run(progress=False)
    seconds = time.monotonic() - started
    thread.join(timeout=120)
    cfg = orchestrator.cfg
    cluster = KafkaCluster(ClusterSettings(brokers=3, port=cfg.kafka_port, home=cfg.run_dir / "kafka"))
    cluster.up()  # started again on the run's data, to read its topics
    yield cfg, summary, cluster.bootstrap, faults, seconds
    cluster.down()


def test_a_worker_and_a_generator_killed_mid_run_lose_nothing(scaled_run):
    cfg, summary, bootstrap, faults, seconds = scaled_run
    assert {"restarted_s", "next_version_s"} <= set(faults.get("worker", {})), faults
    assert {"restarted_s", "next_version_s"} <= set(faults.get("generator", {})), faults
    assert summary["restarts"]["worker-0"] >= 1 and summary["restarts"]["generator-1"] >= 1, summary["restarts"]
    assert summary["learner_steps"] == STEPS and summary["policy_version"] == STEPS
    config_id = summary["config_id"]
    counts, dead = stored_counts(cfg.run_dir, config_id)
    with open_store(str(cfg.run_dir / "chdb")) as store:
        by_generator = dict(store.query("SELECT generator_id, uniqExact(rollout_id) FROM rollouts "
                                        "GROUP BY generator_id").rows)
    distinct = {table: d for table, (_, d) in counts.items()}
    names = cfg.topics
    rollouts = read_topic(names.rollouts, bootstrap)
    feedback = read_topic(names.feedback, bootstrap)
    advantages = read_topic(names.advantages(config_id), bootstrap)
    assert distinct["rollouts"] == distinct["feedback"] == distinct["advantages"] > 0, (
        counts, not_passed_on(rollouts, feedback), not_passed_on(feedback, advantages))
    assert set(by_generator) == {generator_id(NAME, 0), generator_id(NAME, 1)}, by_generator
    assert dead == 0
    # a retried write may land twice in a topic: then only as the same record. A rollout the
    # killed worker had evaluated but not committed is evaluated again: its second feedback
    # keeps the id and the outcome, only the measured run times differ.
    runtimes = frozenset({"runtime_ms"})
    dupes = {"rollouts": duplicates(rollouts, "rollout_id"),
             "feedback": duplicates(feedback, "rollout_id", runtimes),
             "advantages": duplicates(advantages, "rollout_id")}
    assert all(differing == 0 for _, differing in dupes.values()), dupes
    assert len({e.record["rollout_id"] for e in rollouts}) == distinct["rollouts"]
    per_generator = Counter(e.record["generator_id"] for e in rollouts)
    print(f"faults {faults}; restarts {summary['restarts']}; rows (all, distinct ids) {counts}; "
          f"duplicates in topics (extra, differing) {dupes}; rollouts per generator {dict(per_generator)}; "
          f"run {seconds:.0f}s")
    audit = learner_read_of_run(cfg, config_id, bootstrap)
    print(f"learner read {audit}")
    assert read_without_gaps(audit), audit
