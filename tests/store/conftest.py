"""Records shaped like each Avro schema, and the stores the tests run against.

Every factory's record is sent through the real codec (encode, then decode), so a
record that drifts from schemas/*.avsc fails here, not silently in the store.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from consumers.store import ChdbStore, ClickHouseServerStore
from tests import factories
from tests.factories import T0, roundtrip


def envelope(n: int) -> dict:
    return {"event_id": f"ev{n:06d}", "schema_version": 1, "created_at_ms": T0 + n}


def task(n: int, bug_pattern: str = "off_by_one", source: str = "mbpp") -> dict:
    return roundtrip("Task", factories.task(**envelope(n), task_id=f"t{n}", function_id=f"f{n}", source=source,
                                            bug_pattern=bug_pattern))


def rollout(n: int, policy_version: int = 0) -> dict:
    return roundtrip("Rollout", factories.rollout(**envelope(n), rollout_id=f"r{n}", sample_index=n,
                                                  policy_version=policy_version))


def feedback(
    n: int, bug_pattern: str = "off_by_one", passed: tuple[bool, ...] = (True, False), policy_version: int = 0
) -> dict:
    return roundtrip("Feedback", factories.feedback(
        **envelope(n), **factories.run_fields(passed, runtime_ms=1.5), rollout_id=f"r{n}", bug_pattern=bug_pattern,
        sample_index=n, policy_version=policy_version, hack_flags=[] if n % 2 else ["swallow"],
        rename_passed=None if n % 3 else True))


def advantage(n: int, config_id: str = "base", advantage_value: float = 0.5) -> dict:
    return roundtrip("Advantage", factories.advantage(**envelope(n), config_id=config_id, rollout_id=f"r{n}",
                                                      feedback_event_id=f"fb{n}", sample_index=n,
                                                      advantage=advantage_value))


def policy(n: int, version: int = 1) -> dict:
    return roundtrip("PolicyVersion", factories.policy_version(**envelope(n), version=version,
                                                               learner_step=10 * version, location=f"/ckpt/{version}"))


def metric(n: int, source: str = "learner", values: dict | None = None) -> dict:
    return roundtrip("Metric", factories.metric(**envelope(n), source=source, step=n, values=values or {"loss": 0.5},
                                                labels={"run": "a"}))


def dead_letter(n: int, source_topic: str = "feedback") -> dict:
    return roundtrip("DeadLetter", factories.dead_letter(**envelope(n), source_topic=source_topic, source_offset=n,
                                                         key=b"g0", value=b"\xc3\x01\xff\x00"))


@pytest.fixture
def chdb_store(tmp_path):
    # chDB holds one data path per process, so each test closes its store before the next opens.
    store = ChdbStore(tmp_path / "chdb")
    store.init_schema()
    yield store
    store.close()


def _server_url_with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


@pytest.fixture
def server_store():
    url = os.environ.get("RESHAPER_CLICKHOUSE_URL")
    if not url:
        pytest.skip("RESHAPER_CLICKHOUSE_URL is not set (no ClickHouse server to test against)")
    database = f"reshaper_test_{uuid.uuid4().hex[:12]}"
    admin = ClickHouseServerStore(url)
    admin.command(f"CREATE DATABASE {database}")
    store = ClickHouseServerStore(_server_url_with_database(url, database))
    store.init_schema()
    yield store
    store.close()
    admin.command(f"DROP DATABASE {database}")
    admin.close()


@pytest.fixture(params=["chdb", "server"])
def store(request):
    """The same behaviour tests on both backends; the server one skips without a URL."""
    return request.getfixturevalue(f"{request.param}_store")
