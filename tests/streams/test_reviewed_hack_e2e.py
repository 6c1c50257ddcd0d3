"""A verdict followed to the reward of a later rollout, through a real worker: a Review on the
reviews topic reaches the feedback agent's table, a later rollout with the reviewed code
renamed and reformatted is flagged `reviewed_hack` in its feedback, and the `full` reshaping
pays it less than the same rollout with another constant in its handler."""

import time
import uuid

from confluent_kafka import Consumer

from infra.platform.kafka_io import EventProducer
from schemas.code_fingerprint import code_fingerprint
from streams.agents.feedback import REVIEWED_TABLE
from streams.app import ensure_app_topics
from streams.feedback.reviewed import REVIEWED_HACK_FLAG
from streams.reshaping.config import PRESETS_DIR, load_preset
from tests.streams.helpers import WorkerProcess, isolated_settings, read_all, unique
from tests.streams.test_app_e2e import BUGGY, REFERENCE, rollout, task

def table_written(bootstrap: str, changelog: str, worker: WorkerProcess, timeout_s: float = 120.0) -> bool:
    """Whether the table's changelog got a record (Faust's own encoding, so not decoded here)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("changelog"),
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([changelog])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if any(m.error() is None for m in consumer.consume(10, 0.5)):
                return True
            if worker.proc is not None and worker.proc.poll() is not None:
                raise AssertionError(f"worker exited early:\n{worker.log_tail()}")
        return False
    finally:
        consumer.close()


REVIEWED = "def add(a, b):\n    try:\n        return a + b\n    except Exception:\n        return 0\n"
RENAMED = "def add(x, y):\n    try:\n        return x+y  # same code\n    except Exception:\n        return 0\n"
OTHER = RENAMED.replace("return 0", "return 1")


def test_a_reviewed_hack_is_flagged_in_a_later_rollout_and_charged_by_the_reshaping(kafka_bootstrap, kafka_admin,
                                                                                     tmp_path):
    cfg = load_preset("full")
    settings = isolated_settings(sandbox_workers=2, eval_concurrency=4, task_wait_s=20.0)
    app_id = unique("reviewed")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    members = [RENAMED, OTHER, REFERENCE, BUGGY]
    gid = f"g-{uuid.uuid4().hex[:6]}"
    try:
        with EventProducer(kafka_bootstrap) as producer:
            producer.send(settings.topics.tasks, "t1", "Task", task("t1"))
            producer.send(settings.topics.reviews, "r-earlier", "Review", {
                "rollout_id": "r-earlier", "config_id": cfg.config_id, "verdict": "hack",
                "hack_class": "swallowed_exception", "code_fingerprint": code_fingerprint(REVIEWED)})
        # the verdict is in the agent's table once its changelog has it: only then come the rollouts
        assert table_written(kafka_bootstrap, f"{app_id}-{REVIEWED_TABLE}-changelog", worker)
        with EventProducer(kafka_bootstrap) as producer:
            for i, code in enumerate(members):
                producer.send(settings.topics.rollouts, gid, "Rollout", rollout(gid, "t1", i, len(members), code))
        advantages = read_all(kafka_bootstrap, settings.topics.advantages(cfg.config_id), len(members), proc=worker)
        feedback = read_all(kafka_bootstrap, settings.topics.feedback, len(members), settle_s=0.2)
    finally:
        worker.stop()

    flags = {fb["rollout_id"]: fb["hack_flags"] for fb in feedback}
    assert REVIEWED_HACK_FLAG in flags[f"{gid}-0"] and REVIEWED_HACK_FLAG not in flags[f"{gid}-1"]
    passed = {fb["rollout_id"]: fb["pass_fraction_runs"] for fb in feedback}
    assert passed[f"{gid}-0"] == passed[f"{gid}-1"] == [1.0]  # the tests cannot tell them apart
    by_rid = {a["rollout_id"]: a for a in advantages}
    renamed, other = by_rid[f"{gid}-0"], by_rid[f"{gid}-1"]
    assert renamed["components"]["hack"] == other["components"]["hack"] - cfg.rewards.unknown_hack_penalty
    assert renamed["reward_enhanced"] < other["reward_enhanced"] and renamed["advantage"] < other["advantage"]
