"""`reshaper run` with the vLLM generator (on a CPU, vLLM's CPU build in its own environment):
every rollout gets exactly one feedback and one advantage, and the learner, recomputing the
behaviour logprobs, finds importance weights near 1."""

import csv

import pytest

from consumers.store import open_store
from infra.compose.orchestrator import Orchestrator
from infra.compose.run_config import RunConfig

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own broker and a vLLM engine

STEPS = 2


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    cfg = RunConfig(name="e2e-vllm", runs_dir=tmp_path_factory.mktemp("runs"), steps=STEPS, max_functions=10,
                    group_size=2, max_new_tokens=24, groups_per_step=1,
                    generator={"backend": "vllm", "max_inflight_groups": 2, "vllm_max_model_len": 1024})
    orchestrator = Orchestrator(cfg)
    summary = orchestrator.run(progress=False)
    return orchestrator.cfg, summary


def test_the_run_trains_on_vllm_rollouts_with_exact_rows(finished_run):
    cfg, summary = finished_run
    assert summary["learner_steps"] == STEPS and sum(summary["restarts"].values()) == 0
    rows = summary["rows"]
    assert rows["rollouts"] == rows["feedback"] == rows["advantages"] > 0 and rows["dead_letters"] == 0
    with open_store(str(cfg.run_dir / "chdb")) as store:
        distinct = {table: store.query(f"SELECT uniqExact(rollout_id) FROM {table}").rows[0][0]
                    for table in ("rollouts", "feedback", "advantages")}
    assert len(set(distinct.values())) == 1, distinct
    assert "vllm" in (cfg.run_dir / "logs" / "generator.log").read_text().lower()  # the engine that sampled


def test_the_learner_finds_importance_weights_near_one(finished_run):
    cfg, _ = finished_run
    with open(cfg.run_dir / "report" / "learner_metrics.csv") as f:
        steps = list(csv.DictReader(f))
    assert len(steps) == STEPS
    for step in steps:
        # bf16 sampling against the learner's own bf16 recomputation
        assert abs(float(step["loss/is_weight_mean"]) - 1.0) < 0.1, step
        assert float(step["loss/mismatch_abs_logp"]) < 0.2, step
