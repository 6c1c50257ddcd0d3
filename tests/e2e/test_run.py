"""`reshaper run` end to end on the real broker, chDB and the tiny model."""

import pytest

from consumers.store import open_store
from infra.platform.broker import KafkaBroker
from infra.platform.kafka_io import read_topic
from infra.platform.settings import BrokerSettings
from infra.compose.orchestrator import Orchestrator
from infra.compose.run_config import RunConfig
from tests.e2e.stored import learner_read_of_run, read_without_gaps

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own broker


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run on its own broker (the embedded default), kept up afterwards for the checks."""
    cfg = RunConfig(name="e2e", runs_dir=tmp_path_factory.mktemp("runs"), model="tiny", steps=3, max_functions=10,
                    group_size=2, max_new_tokens=16, groups_per_step=1, generator={"max_inflight_groups": 4},
                    learner={"learning_rate": 1e-3})
    orchestrator = Orchestrator(cfg)
    summary = orchestrator.run(progress=False)
    cfg = orchestrator.cfg  # now with the port of its broker
    broker = KafkaBroker(BrokerSettings(port=cfg.kafka_port, home=cfg.run_dir / "kafka"))
    bootstrap = broker.up().bootstrap  # restarted on the run's data, to count its topics
    yield cfg, summary, bootstrap
    broker.down()


def test_policy_version_advances_and_report_is_written(finished_run):
    cfg, summary, _ = finished_run
    assert summary["learner_steps"] == 3
    assert summary["policy_version"] == 3  # one version published per step
    speed = summary["throughput"]
    assert 0 < speed["first_rollout_s"] < summary["seconds"] and speed["rollouts_per_min"] > 0
    report = cfg.run_dir / "report"
    for name in ("run.yaml", "reshaping.yaml", "generator.yaml", "learner.yaml", "learner_metrics.csv",
                 "summary.json", "learner.png"):
        assert (report / name).stat().st_size > 0, name
    assert len((report / "learner_metrics.csv").read_text().strip().splitlines()) == 1 + 3


def test_clickhouse_rows_equal_topic_events_exactly(finished_run):
    cfg, summary, bootstrap = finished_run
    config_id = summary["config_id"]
    names = cfg.topics
    topics = {names.tasks: "tasks", names.rollouts: "rollouts", names.feedback: "feedback", names.policy: "policy",
              names.metrics: "metrics", names.advantages(config_id): "advantages"}
    with open_store(str(cfg.run_dir / "chdb")) as store:
        for topic, table in topics.items():
            events = read_topic(topic, bootstrap)
            rows = store.query(f"SELECT count() FROM {table} FINAL WHERE _topic = {{t:String}}", {"t": topic}).rows[0][0]
            assert rows == len(events), topic
        ours = store.query("SELECT count() FROM advantages FINAL WHERE config_id = {c:String}", {"c": config_id})
        assert ours.rows[0][0] > 0


def test_every_drift_query_returns_rows_and_a_png(finished_run):
    cfg, summary, _ = finished_run
    pngs = set(summary["drift_reports"])
    # hack_rates has rows only once some candidate raises a flag (a random tiny model writes
    # nothing that parses); config_compare needs a replay under a second config
    for name in ("reward_by_version", "reward_by_window", "pattern_success", "proxy_vs_heldout", "learner_health"):
        assert f"{name}.png" in pngs, name
        assert (cfg.run_dir / "report" / f"{name}.png").stat().st_size > 5000


def test_the_metrics_are_tensorboard_scalars_under_trl_names(finished_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg, summary, _ = finished_run
    folder = cfg.run_dir / "tensorboard"
    learner = EventAccumulator(str(folder / "learner"))
    learner.Reload()
    assert {"loss", "grad_norm", "entropy", "completions/mean_length", "learner/loss/loss"} <= set(
        learner.Tags()["scalars"])
    assert len({event.step for event in learner.Scalars("loss")}) == summary["learner_steps"]
    assert any(d.name.startswith("generator-") for d in folder.iterdir())


CRASH_SIGNS = ("Traceback (most recent call last)", "crashed", "Crashed", "PartitionsMismatch",
               "not found in cluster metadata", "restarting")


def test_a_first_run_on_a_fresh_broker_crashes_and_restarts_nothing(finished_run):
    cfg, summary, _ = finished_run
    assert summary["restarts"] == {"worker": 0, "sink": 0, "learner": 0, "generator": 0, "tensorboard": 0}
    for log in sorted((cfg.run_dir / "logs").glob("*.log")):
        text = log.read_text(errors="replace")
        assert not [sign for sign in CRASH_SIGNS if sign in text], (log.name, text[-3000:])


def test_the_windowed_pattern_tables_hold_the_run(finished_run):
    # The hopping and tumbling tables' changelogs: one record per (pattern, window) update,
    # keyed by pattern and window, valued by the window's statistics.
    import json

    from confluent_kafka import Consumer, TopicPartition

    cfg, summary, bootstrap = finished_run
    with open_store(str(cfg.run_dir / "chdb")) as store:
        patterns = {r[0] for r in store.query("SELECT DISTINCT bug_pattern FROM feedback FINAL").rows}
    for table in ("pattern-tumbling", "pattern-hopping"):
        topic = f"reshaper-{cfg.name}-{table}-changelog"
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{table}", "enable.auto.commit": False})
        try:
            parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            assert len(parts) == 4
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
            consumer.assign([TopicPartition(topic, p, 0) for p in parts if ends[p] > 0])
            records, want = [], sum(ends.values())
            while len(records) < want:
                msg = consumer.poll(10)
                assert msg is not None, f"{topic}: {len(records)} of {want} records"
                records.append((json.loads(msg.key()), json.loads(msg.value())))
        finally:
            consumer.close()
        assert records, topic
        keyed = {key[0] for key, _ in records}  # windowed keys are [pattern, [start, end]]
        assert keyed == patterns | {"*"}, (keyed, patterns)  # every pattern, and "*" for all of them
        assert all(isinstance(value, dict) and value for _, value in records)


@pytest.fixture(scope="module")
def crashed_run(tmp_path_factory):
    """A run whose every component is SIGKILLed once, while it works."""
    import os
    import signal
    import threading
    import time

    cfg = RunConfig(name="e2e-kill", runs_dir=tmp_path_factory.mktemp("runs"), model="tiny", steps=5,
                    max_functions=10, group_size=2, max_new_tokens=16, groups_per_step=1,
                    generator={"max_inflight_groups": 4}, learner={"learning_rate": 1e-3})
    orchestrator = Orchestrator(cfg)
    killed: dict[str, int] = {}

    def versions() -> int:
        return len(list((cfg.run_dir / "policy").glob("v-*")))

    def kill_when(name: str, at_versions: int, deadline: float) -> None:
        while time.monotonic() < deadline:
            comps = {c.name: c for c in orchestrator.components}
            comp = comps.get(name)
            if comp is not None and comp.alive() and versions() >= at_versions:
                os.kill(comp.proc.pid, signal.SIGKILL)
                killed[name] = versions()
                return
            time.sleep(0.2)

    def killer() -> None:
        deadline = time.monotonic() + 1200
        # each while the learner still has steps to make: it publishes one version per step
        for name, at in (("generator", 1), ("worker", 1), ("learner", 2), ("sink", 3)):
            kill_when(name, at, deadline)
            time.sleep(3)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    summary = orchestrator.run(progress=False)
    thread.join(timeout=5)
    cfg = orchestrator.cfg
    broker = KafkaBroker(BrokerSettings(port=cfg.kafka_port, home=cfg.run_dir / "kafka"))
    bootstrap = broker.up().bootstrap
    yield cfg, summary, bootstrap, killed
    broker.down()


def test_sigkill_of_each_component_loses_and_doubles_nothing(crashed_run):
    cfg, summary, bootstrap, killed = crashed_run
    assert sorted(killed) == ["generator", "learner", "sink", "worker"], killed
    assert summary["restarts"] == {"worker": 1, "sink": 1, "learner": 1, "generator": 1, "tensorboard": 0}
    assert summary["learner_steps"] == 5 and summary["policy_version"] == 5
    config_id = summary["config_id"]
    counts = {}
    with open_store(str(cfg.run_dir / "chdb")) as store:
        for table, key, where in (("rollouts", "rollout_id", ""), ("feedback", "rollout_id", ""),
                                  ("advantages", "rollout_id", f"WHERE config_id = '{config_id}'")):
            plain, final, distinct = store.query(
                f"SELECT (SELECT count() FROM {table} {where}), (SELECT count() FROM {table} FINAL {where}), "
                f"(SELECT uniqExact({key}) FROM {table} {where})").rows[0]
            assert plain == final == distinct, (table, plain, final, distinct)
            counts[table] = plain
    print(f"killed at policy versions {killed}; restarts {summary['restarts']}; rows {counts}")
    assert counts["rollouts"] == counts["feedback"] == counts["advantages"] > 0, counts
    assert counts["rollouts"] == len(read_topic(cfg.topics.rollouts, bootstrap))
    audit = learner_read_of_run(cfg, config_id, bootstrap)
    print(f"learner read {audit}")
    assert read_without_gaps(audit), audit
