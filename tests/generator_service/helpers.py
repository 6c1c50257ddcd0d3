"""Records and readers shared by the generator service tests."""

from __future__ import annotations

import time
import uuid

from infra.platform.kafka_io import EventConsumer

BUGGY = [
    "def add(a, b):\n    return a - b\n",
    "def is_even(n):\n    return n % 2 == 1\n",
    "def last(xs):\n    return xs[len(xs)]\n",
]


def make_task(
    task_id: str,
    *,
    pattern: str = "operator_swap",
    difficulty: float = 0.2,
    split: str = "train",
    buggy_code: str = BUGGY[0],
) -> dict:
    return {
        "task_id": task_id,
        "function_id": f"f-{task_id}",
        "source": "custom",
        "split": split,
        "entry_point": "f",
        "reference_code": "def f():\n    return 1\n",
        "buggy_code": buggy_code,
        "tests": ["assert f() == 1"],
        "bug_pattern": pattern,
        "difficulty": difficulty,
    }


def read_topic(topic: str, bootstrap: str, expected: int, timeout_s: float = 20.0) -> list:
    """The first `expected` events of `topic` (fewer if the timeout runs out)."""
    consumer = EventConsumer([topic], f"test-reader-{uuid.uuid4().hex}", bootstrap)
    events = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(events) < expected and time.monotonic() < deadline:
            events.extend(consumer.poll_batch(500, 0.5))
    finally:
        consumer.close()
    return events
