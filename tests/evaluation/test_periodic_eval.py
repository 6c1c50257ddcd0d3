"""Held-out success while training: the periodic evaluator on the tiny model and the real broker."""

import json
import uuid

import pytest

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics, ensure_topics
from producers.evaluation.periodic import (HeldoutRunConfig, PeriodicEvaluator, due_versions, heldout_curve_csv,
                                           report_path)
from producers.evaluation.taskfile import normalise_task, write_eval_tasks
from producers.generator.model_store import build_tiny_model, cached_smollm2
from tests.generator_service.helpers import read_topic

TASKS = [{"task_id": "add", "function_id": "add", "source": "custom", "entry_point": "add", "bug_pattern": "op",
          "buggy_code": "def add(a, b):\n    return a - b\n", "reference_code": "def add(a, b):\n    return a + b\n",
          "tests": ["assert add(1, 2) == 3"]}]


def test_due_versions_are_the_multiples_not_done_yet_oldest_first():
    assert due_versions([5, 1, 2, 3, 4, 6], 2, done=[2]) == [4, 6]
    assert due_versions([0, 3], 3, done=[]) == [3]  # the base (version 0) is not a policy the learner published
    assert due_versions([], 1, done=[]) == []


@pytest.mark.kafka
@pytest.mark.timeout(600)
def test_one_eval_metric_per_nth_version_on_a_tiny_model(kafka_admin, kafka_bootstrap, tmp_path):
    topics = Topics(prefix=f"test-heldout-{uuid.uuid4().hex[:10]}.")
    ensure_topics(kafka_admin, [s for s in topics.event_specs() if s.name in (topics.policy, topics.metrics)])
    model = build_tiny_model(tmp_path / "tiny", cached_smollm2())
    write_eval_tasks(tmp_path / "tasks.jsonl", [normalise_task(t, t["task_id"]) for t in TASKS])
    producer = EventProducer(kafka_bootstrap)
    for version in range(1, 6):  # a full model directory is a policy too: the tiny model stands for each
        producer.send(topics.policy, str(version), "PolicyVersion", {
            "version": version, "learner_step": version, "location": str(model), "sha256": "0" * 64,
            "base_model": str(model), "config_id": "cfg"})
    producer.send(topics.policy, "9", "PolicyVersion", {  # another reshaping config's policy: not ours
        "version": 6, "learner_step": 6, "location": str(model), "sha256": "0" * 64, "base_model": str(model),
        "config_id": "other"})
    producer.flush()

    cfg = HeldoutRunConfig(heldout={"enabled": True, "every": 2, "device": "cpu"}, model_dir=model,
                           tasks=tmp_path / "tasks.jsonl", max_new_tokens=8, config_id="cfg", out_dir=tmp_path / "out",
                           topics=topics, poll_interval_s=0.5, idle_timeout_s=3.0)
    evaluator = PeriodicEvaluator(cfg, kafka_bootstrap)
    try:
        assert evaluator.run() == [2, 4]
    finally:
        evaluator.close()

    metrics = [e.record for e in read_topic(topics.metrics, kafka_bootstrap, 3, timeout_s=5.0)]
    assert [(m["source"], m["step"], m["config_id"], m["labels"]["policy_version"]) for m in metrics] == [
        ("eval", 2, "cfg", "2"), ("eval", 4, "cfg", "4")]
    assert all(0.0 <= m["values"]["success_at_1"] <= 1.0 for m in metrics)
    report = json.loads(report_path(cfg.out_dir, 4).read_text())
    assert report["policy_version"] == 4 and len(report["candidates"]) == len(TASKS)
    assert heldout_curve_csv(cfg.out_dir).splitlines()[0] == "policy_version,tasks,success_at_1,mean_pass_fraction"

    again = PeriodicEvaluator(cfg, kafka_bootstrap)  # a restart evaluates nothing twice
    try:
        assert again.run() == []
    finally:
        again.close()
