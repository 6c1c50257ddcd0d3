"""Shared fixtures. Streaming tests run against the real Apache Kafka broker: the one named
by RESHAPER_BOOTSTRAP (the test command starts it), or one this session starts itself."""

from __future__ import annotations

import os
import uuid

import pytest

TEST_KAFKA_PORT = int(os.environ.get("RESHAPER_TEST_KAFKA_PORT", "39092"))


@pytest.fixture(scope="session")
def kafka_bootstrap():
    if os.environ.get("RESHAPER_BOOTSTRAP"):
        yield os.environ["RESHAPER_BOOTSTRAP"]
        return
    from infra.platform.broker import KafkaBroker
    from infra.platform.settings import BrokerSettings

    broker = KafkaBroker(BrokerSettings(port=TEST_KAFKA_PORT))
    started_here = not broker.status().running
    status = broker.up()
    os.environ["RESHAPER_BOOTSTRAP"] = status.bootstrap  # for subprocesses the tests start
    yield status.bootstrap
    os.environ.pop("RESHAPER_BOOTSTRAP", None)
    if started_here:  # a broker this session started does not outlive it (it would hold the port)
        broker.down()


@pytest.fixture
def kafka_admin(kafka_bootstrap):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def fresh_topic(kafka_admin):
    """Factory for uniquely named topics, so tests never see each other's records."""
    from infra.platform.topics import KEEP_FOREVER, TopicSpec, ensure_topics

    def make(prefix: str = "t", partitions: int = 4, config: dict | None = None) -> str:
        name = f"test-{prefix}-{uuid.uuid4().hex[:10]}"
        ensure_topics(kafka_admin, [TopicSpec(name, partitions, 1, config or KEEP_FOREVER)])
        return name

    return make


@pytest.fixture(autouse=True)
def _mark_kafka(request):
    if "kafka_bootstrap" in request.fixturenames:
        request.node.add_marker(pytest.mark.kafka)
