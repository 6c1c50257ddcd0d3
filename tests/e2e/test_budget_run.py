"""`reshaper run` on a budget of generated groups, end to end on the tiny model: the generator
stops at the budget and the learner trains the last, partial step and ends the run."""

import csv

import pytest

from infra.compose.orchestrator import Orchestrator
from infra.compose.run_config import RunConfig

pytestmark = [pytest.mark.kafka, pytest.mark.slow]  # starts its own broker


@pytest.mark.timeout(900)
def test_a_budget_that_steps_do_not_divide_ends_on_a_partial_step(tmp_path):
    cfg = RunConfig(name="budget", runs_dir=tmp_path, model="tiny", max_generated_groups=3, groups_per_step=2,
                    max_functions=10, group_size=2, max_new_tokens=16, generator={"max_inflight_groups": 4},
                    learner={"learning_rate": 1e-3})
    assert cfg.steps == 2
    summary = Orchestrator(cfg).run(progress=False)
    assert summary["learner_steps"] == 2 and not summary["interrupted"]
    assert summary["rollouts"]["groups_generated"] == 3
    assert summary["rollouts"]["generated"] == summary["rollouts"]["trained"] == 6
    with open(cfg.run_dir / "report" / "learner_metrics.csv") as fh:
        samples = [float(row["num_samples"]) for row in csv.DictReader(fh)]
    assert samples == [4, 2]  # two groups of two, then the one group left
