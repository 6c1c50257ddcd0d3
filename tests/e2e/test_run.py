"""`reshaper run` end to end on the real broker, chDB and the tiny model."""

import pytest

from consumers.store import open_store
from infra.broker import KafkaBroker
from infra.kafka_io import read_topic
from infra.settings import BrokerSettings
from infra.orchestrator import Orchestrator
from infra.run_config import RunConfig

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own broker


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run on its own broker (the embedded default), kept up afterwards for the checks."""
    cfg = RunConfig(name="e2e", runs_dir=tmp_path_factory.mktemp("runs"), model="tiny", steps=3, max_functions=10,
                    group_size=2, max_new_tokens=16, groups_per_step=1, max_inflight_groups=4, learning_rate=1e-3)
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
    report = cfg.run_dir / "report"
    for name in ("run.yaml", "reshaping.yaml", "generator.yaml", "learner.yaml", "learner_metrics.csv",
                 "summary.json", "learner.png"):
        assert (report / name).stat().st_size > 0, name
    assert len((report / "learner_metrics.csv").read_text().strip().splitlines()) == 1 + 3


def test_clickhouse_rows_equal_topic_events_exactly(finished_run):
    cfg, summary, bootstrap = finished_run
    config_id = summary["config_id"]
    topics = {"tasks": "tasks", "rollouts": "rollouts", "feedback": "feedback", "policy": "policy",
              "metrics": "metrics", f"advantages.{config_id}": "advantages"}
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
