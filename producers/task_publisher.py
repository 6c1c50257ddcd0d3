"""Publish a task corpus (JSONL of Task records) to the `tasks` topic, keyed by task_id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from tqdm import tqdm

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics


def read_tasks(path: Path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def publish_tasks(tasks: Iterable[dict], bootstrap: str | None = None, topics: Topics = Topics(),
                  progress: bool = True) -> int:
    """Send every task; returns how many the broker acknowledged. Raises on any failure."""
    tasks = list(tasks)
    with EventProducer(bootstrap) as producer:
        for task in tqdm(tasks, desc="publishing tasks", unit="task", disable=not progress):
            producer.send(topics.tasks, task["task_id"], "Task", task)
    return producer.delivered
