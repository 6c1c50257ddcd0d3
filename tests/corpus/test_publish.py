"""`reshaper tasks publish` against the real broker."""

import json
import os
import subprocess
import sys

import pytest

from infra.platform.kafka_io import read_topic
from infra.platform.topics import Topics
from tests.foundation.samples import SAMPLES

pytestmark = pytest.mark.kafka


def test_publish_sends_every_task_of_the_chosen_splits(kafka_bootstrap, kafka_admin, tmp_path):
    from infra.platform.topics import Topics, ensure_topics

    ensure_topics(kafka_admin, Topics().event_specs())
    tag = os.urandom(4).hex()
    tasks = [{**SAMPLES["Task"], "task_id": f"pub-{tag}-{i}", "split": "train" if i % 2 else "validation"}
             for i in range(6)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    out = subprocess.run([sys.executable, "-m", "infra.compose.cli", "tasks", "publish", str(path), "--split", "train"],
                         env={**os.environ, "PYTHONPATH": os.getcwd()}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "published 3 tasks" in out.stdout
    got = {e.record["task_id"]: e for e in read_topic(Topics().tasks, kafka_bootstrap) if e.record["task_id"].startswith(f"pub-{tag}")}
    assert sorted(got) == [f"pub-{tag}-{i}" for i in (1, 3, 5)]
    assert all(e.key.decode() == e.record["task_id"] for e in got.values())
