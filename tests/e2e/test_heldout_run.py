"""`reshaper run` with held-out success while training, end to end on the tiny model: every
policy version is evaluated, its eval metric reaches the store, and proxy_vs_heldout pairs it
with the reward of that version."""

import io

import pytest
from rich.console import Console

from consumers.drift.report import run_drift
from consumers.store import open_store
from infra.compose.orchestrator import Orchestrator
from infra.compose.run_config import RunConfig

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own broker


@pytest.mark.timeout(900)
def test_each_nth_version_is_evaluated_and_set_beside_its_reward(tmp_path):
    cfg = RunConfig(name="heldout", runs_dir=tmp_path, model="tiny", steps=2, max_functions=10, group_size=2,
                    max_new_tokens=16, groups_per_step=1, generator={"max_inflight_groups": 4},
                    learner={"learning_rate": 1e-3},
                    heldout={"enabled": True, "every": 1, "max_tasks": 2, "device": "cpu"})
    summary = Orchestrator(cfg).run(progress=False)
    assert summary["policy_version"] == 2
    curve = (cfg.run_dir / "report" / "heldout.csv").read_text().splitlines()
    assert [line.split(",")[:2] for line in curve[1:]] == [["1", "2"], ["2", "2"]]  # versions 1 and 2, 2 tasks
    with open_store(str(cfg.run_dir / "chdb")) as store:
        report = run_drift(store, "proxy_vs_heldout", since="30d", config=summary["config_id"],
                           out_dir=tmp_path, console=Console(file=io.StringIO()))
    rows = {r["policy_version"]: r for r in report.as_dicts()}
    for version in (1, 2):
        assert rows[version]["eval_rows"] == 1 and 0.0 <= rows[version]["heldout_success"] <= 1.0
