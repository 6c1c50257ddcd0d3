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
from schemas.codec import decode, encode

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC, in ms


def roundtrip(name: str, record: dict) -> dict:
    return decode(encode(name, record))


def envelope(n: int) -> dict:
    return {"event_id": f"ev{n:06d}", "schema_version": 1, "created_at_ms": T0 + n}


def task(n: int, bug_pattern: str = "off_by_one", source: str = "mbpp") -> dict:
    return roundtrip(
        "Task",
        {
            **envelope(n),
            "task_id": f"t{n}",
            "function_id": f"f{n}",
            "source": source,
            "split": "train",
            "entry_point": "f",
            "reference_code": "def f(x):\n    return x + 1\n",
            "buggy_code": "def f(x):\n    return x\n",
            "tests": ["assert f(1) == 2"],
            "bug_pattern": bug_pattern,
            "difficulty": 0.25,
        },
    )


def rollout(n: int, policy_version: int = 0) -> dict:
    return roundtrip(
        "Rollout",
        {
            **envelope(n),
            "rollout_id": f"r{n}",
            "group_id": "g0",
            "task_id": "t0",
            "sample_index": n,
            "group_size": 4,
            "policy_version": policy_version,
            "generator_id": "hf-0",
            "prompt_template_version": "v1",
            "prompt_token_ids": [1, 2, 3],
            "completion_token_ids": [4, 5],
            "behaviour_logprobs": [-0.5, -1.5],
            "completion_text": "return x + 1",
            "finish_reason": "stop",
            "temperature": 1.0,
            "max_new_tokens": 64,
        },
    )


def feedback(
    n: int, bug_pattern: str = "off_by_one", passed: tuple[bool, ...] = (True, False), policy_version: int = 0
) -> dict:
    outcomes = [
        {"index": i, "passed": ok, "error_kind": "none" if ok else "wrong_answer", "message": "", "runtime_ms": 1.5}
        for i, ok in enumerate(passed)
    ]
    return roundtrip(
        "Feedback",
        {
            **envelope(n),
            "rollout_id": f"r{n}",
            "group_id": "g0",
            "task_id": "t0",
            "bug_pattern": bug_pattern,
            "difficulty": 0.5,
            "sample_index": n,
            "group_size": 4,
            "policy_version": policy_version,
            "evaluator_version": "e1",
            "repeats": 1,
            "tests_total": len(passed),
            "tests_passed": sum(passed),
            "pass_fraction_runs": [sum(passed) / len(passed)],
            "test_outcomes": outcomes,
            "error_kind": "none" if all(passed) else "wrong_answer",
            "runtime_ms": 3.0,
            "tree_edit_distance": 0.125,
            "style_class": "clean",
            "hack_flags": [] if n % 2 else ["swallow"],
            "rename_passed": None if n % 3 else True,
            "prompt_token_ids": [1, 2, 3],
            "completion_token_ids": [4, 5],
            "behaviour_logprobs": [-0.5, -1.5],
            "finish_reason": "stop",
        },
    )


def advantage(n: int, config_id: str = "base", advantage_value: float = 0.5) -> dict:
    floats = dict.fromkeys(
        [
            "reward_raw",
            "r_test",
            "r_precision",
            "r_style",
            "r_progress",
            "w_test",
            "w_precision",
            "w_style",
            "w_progress",
            "reward_enhanced",
            "reward_normalised",
            "ema_baseline",
            "global_mean",
            "global_std",
            "group_mean",
            "group_std",
        ],
        0.25,
    )
    return roundtrip(
        "Advantage",
        {
            **envelope(n),
            **floats,
            "config_id": config_id,
            "rollout_id": f"r{n}",
            "feedback_event_id": f"fb{n}",
            "group_id": "g0",
            "task_id": "t0",
            "bug_pattern": "off_by_one",
            "sample_index": n,
            "group_size": 4,
            "group_members": 4,
            "group_complete": True,
            "policy_version": 0,
            "advantage": advantage_value,
            "global_count": 10,
            "warmup": False,
            "prompt_token_ids": [1],
            "completion_token_ids": [2],
            "behaviour_logprobs": [-0.5],
            "finish_reason": "stop",
        },
    )


def policy(n: int, version: int = 1) -> dict:
    return roundtrip(
        "PolicyVersion",
        {
            **envelope(n),
            "version": version,
            "learner_step": 10 * version,
            "location": f"/ckpt/{version}",
            "sha256": "ab" * 32,
            "base_model": "tiny",
        },
    )


def metric(n: int, source: str = "learner", values: dict | None = None) -> dict:
    return roundtrip(
        "Metric",
        {
            **envelope(n),
            "source": source,
            "step": n,
            "values": values or {"loss": 0.5},
            "labels": {"run": "a"},
        },
    )


def dead_letter(n: int, source_topic: str = "feedback") -> dict:
    return roundtrip(
        "DeadLetter",
        {
            **envelope(n),
            "source_topic": source_topic,
            "source_partition": 0,
            "source_offset": n,
            "consumer": "store",
            "key": b"g0",
            "value": b"\xc3\x01\xff\x00",
            "error_type": "MalformedRecordError",
            "error_message": "bad magic",
        },
    )


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
