"""The run config's `evaluator` section reaches the worker's evaluator: written into the run
folder, read back by the worker as its StreamSettings, and handed to every evaluation."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from infra.compose.run_config import RunConfig, load_run_config
from schemas.codec import CODEC
from streams.agents.feedback import EVALUATOR_FAILURE_VERSION, feedback_value
from streams.feedback import EvaluatorConfig, aevaluate_rollout
from streams.sandbox import SandboxConfig, SandboxPool
from tests.feedback.test_evaluate import REFERENCE, TASK, rollout

EVALUATOR = {"repeats": 3, "environment_retries": 1, "adversarial_inputs": 0}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=3)) as p:
        yield p


@pytest.fixture
def written(tmp_path):
    from infra.compose.orchestrator import Orchestrator
    from streams.reshaping.config import load_preset

    cfg = RunConfig(name="r", runs_dir=tmp_path, evaluator=EVALUATOR)
    return cfg, Orchestrator(cfg).write_configs(tmp_path / "model", load_preset("full"))


def worker_settings(path):
    from streams.cli import _settings  # how `reshaper worker --settings` reads them

    return _settings(path)


def test_the_run_folder_records_the_evaluator_and_the_worker_reads_it(written):
    cfg, files = written
    assert cfg.evaluator == EvaluatorConfig(**EVALUATOR)
    assert EvaluatorConfig.model_validate(yaml.safe_load(files["evaluator"].read_text())) == cfg.evaluator
    assert load_run_config(files["run"]).evaluator == cfg.evaluator
    assert worker_settings(files["streams"]).evaluator_config == cfg.evaluator
    # never a reshaping setting
    assert not {"repeats", "environment_retries", "evaluator"} & keys(yaml.safe_load(files["reshaping"].read_text()))


def keys(tree) -> set[str]:
    if isinstance(tree, dict):
        return set(tree) | {k for v in tree.values() for k in keys(v)}
    return {k for v in tree for k in keys(v)} if isinstance(tree, list) else set()


def test_the_worker_evaluates_with_the_run_config_s_repeats(written, pool):
    cfg, files = written
    settings = worker_settings(files["streams"])
    value = asyncio.run(feedback_value(TASK, rollout(REFERENCE), aevaluate_rollout, lambda: pool, settings))
    fb = CODEC.decode(value, "Feedback")
    assert fb["repeats"] == 3 and fb["pass_fraction_runs"] == [1.0, 1.0, 1.0]
    assert fb["evaluator_version"] == cfg.evaluator.version != EvaluatorConfig().version
    assert (fb["environment_failure"], fb["evaluation_attempts"], fb["flaky"]) == (False, 1, False)


async def _raises(task, rollout, pool, cfg):
    raise RuntimeError("evaluator broke")


@pytest.mark.parametrize("task, evaluate, message", [(TASK, _raises, "evaluator broke"),
                                                     (None, aevaluate_rollout, "not seen within")])
def test_a_failed_evaluation_or_a_missing_task_is_an_environment_failure(written, task, evaluate, message):
    settings = worker_settings(written[1]["streams"])
    fb = CODEC.decode(asyncio.run(feedback_value(task, rollout(REFERENCE), evaluate, lambda: None, settings)),
                      "Feedback")
    assert fb["error_kind"] == "sandbox" and message in fb["error_message"]
    assert fb["environment_failure"] is True and fb["evaluator_version"] == EVALUATOR_FAILURE_VERSION
