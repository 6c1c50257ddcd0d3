"""Fixtures for the generator service: a tiny Llama with the real tokenizer, a run config
on fresh topics, and a publisher for the events a test feeds in."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import TopicConfigMismatch, Topics, ensure_topics
from producers.generator.config import GeneratorConfig
from producers.generator.model_store import build_tiny_model, cached_smollm2
from producers.generator.service import GenerateRunConfig


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    # A wide init makes next-token distributions peaked, so a LoRA visibly moves the logprobs.
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), cached_smollm2(), initializer_range=0.5)


@pytest.fixture
def topics(kafka_admin) -> Topics:
    """A fresh namespace for every test, its topics created in one call."""
    topics = Topics(prefix=f"test-gen-{uuid.uuid4().hex[:10]}.")
    touched = {topics.tasks, topics.rollouts, topics.policy, topics.metrics}
    specs = [s for s in topics.event_specs() if s.name in touched] + [topics.advantages_spec("test")]
    for attempt in range(20):
        try:
            ensure_topics(kafka_admin, specs)
            break
        except TopicConfigMismatch as exc:
            # A just-created topic can be missing from the metadata for a moment; ask again.
            if "missing" not in str(exc) or attempt == 19:
                raise
            time.sleep(0.25)
    return topics


@pytest.fixture
def run_config(tiny_dir, topics):
    """A GenerateRunConfig on this test's topics; keyword overrides for the generator knobs."""

    def make(
        *,
        max_groups: int | None = None,
        groups_per_step: int = 8,
        groups_per_batch: int = 2,
        idle_timeout_s: float | None = 2.0,
        **generator,
    ) -> GenerateRunConfig:
        knobs = {"model_dir": tiny_dir, "device": "cpu", "group_size": 2, "max_new_tokens": 8, "seed": 3, **generator}
        return GenerateRunConfig(
            generator=GeneratorConfig(**knobs),
            config_id="test",
            groups_per_step=groups_per_step,
            groups_per_batch=groups_per_batch,
            max_groups=max_groups,
            generator_id="gen-test",
            poll_interval_s=0.2,
            idle_timeout_s=idle_timeout_s,
            startup_timeout_s=20.0,
            topics=topics,
        )

    return make


@pytest.fixture
def publish(kafka_bootstrap):
    producer = EventProducer(kafka_bootstrap)

    def send(topic: str, key: str, payload: str, record: dict) -> dict:
        full = producer.send(topic, key, payload, record)
        producer.flush()
        return full

    return send
