"""The command line entry point (as a typer command) and delivery failures surfacing."""

from __future__ import annotations

import uuid

import pytest
import typer
import yaml
from typer.testing import CliRunner

from infra.platform.kafka_io import DeliveryError, EventProducer
from infra.platform.topics import Topics, ensure_topics
from producers.generator.backends.hf import TransformersBackend
from producers.generator.cli import generate
from producers.generator.service import GeneratorService
from tests.generator_service.helpers import make_task, read_topic

pytestmark = pytest.mark.kafka


def test_generate_command_runs_a_yaml_config(run_config, publish, kafka_bootstrap, tmp_path):
    cfg = run_config(max_groups=2, group_size=2)
    publish(cfg.topics.tasks, "t0", "Task", make_task("t0"))
    path = tmp_path / "gen.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    app = typer.Typer()
    app.command()(generate)
    result = CliRunner().invoke(
        app, ["--config", str(path), "--bootstrap", kafka_bootstrap, "--no-progress", "--max-groups", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "1 groups, 2 rollouts" in result.output and "(max_groups)" in result.output
    assert {e.record["task_id"] for e in read_topic(cfg.topics.rollouts, kafka_bootstrap, 2)} == {"t0"}


def test_undeliverable_rollouts_raise_a_delivery_error(run_config, publish, kafka_bootstrap, kafka_admin, tiny_dir):
    # The broker does not auto-create topics, so records for a missing topic time out:
    # a namespace with every topic but rollouts.
    topics = Topics(prefix=f"test-gen-{uuid.uuid4().hex[:10]}-no-rollouts.")
    ensure_topics(kafka_admin, [s for s in topics.event_specs() if s.name != topics.rollouts]
                  + [topics.advantages_spec("test")])
    cfg = run_config(max_groups=1).model_copy(update={"topics": topics})
    publish(cfg.topics.tasks, "t0", "Task", make_task("t0"))
    producer = EventProducer(kafka_bootstrap, **{"message.timeout.ms": 1500, "delivery.timeout.ms": 1500})
    service = GeneratorService(
        cfg, TransformersBackend(tiny_dir, device="cpu"), bootstrap=kafka_bootstrap, producer=producer
    )
    try:
        with pytest.raises(DeliveryError, match="no-rollouts.rollouts"):
            service.run()
        assert service.state.groups == 0  # nothing undelivered is counted as produced
    finally:
        service.tasks.close()
        service.learner.close()
