"""A worker whose rollouts partition stops moving takes itself down; one that keeps up does not."""

from __future__ import annotations

import uuid

from infra.platform.kafka_io import EventProducer
from streams.agents.liveness import STALLED_EXIT, StallWatch
from streams.app import ensure_app_topics
from streams.reshaping.config import PRESETS_DIR, load_preset
from tests.factories import task
from tests.streams.hanging import HANG
from tests.streams.helpers import WorkerProcess, isolated_settings, read_all, unique
from tests.streams.test_app_e2e import rollout

ROLLOUTS = ("rollouts", 0)


def test_a_partition_with_records_behind_a_commit_that_stays_put_is_stalled():
    watch = StallWatch(timeout_s=10)
    assert watch.observe({ROLLOUTS: (5, 5)}, now=0) == []  # read to its end: no clock
    assert watch.observe({ROLLOUTS: (5, 7)}, now=100) == []  # records wait: the clock starts here
    assert watch.observe({ROLLOUTS: (5, 9)}, now=109) == []
    assert watch.observe({ROLLOUTS: (5, 9)}, now=110) == [ROLLOUTS]
    assert watch.observe({ROLLOUTS: (6, 9)}, now=111) == []  # a commit: the clock starts again
    assert watch.observe({ROLLOUTS: (6, 9)}, now=120) == []
    assert watch.observe({}, now=200) == []  # given away: forgotten
    assert watch.observe({ROLLOUTS: (6, 9)}, now=205) == []
    assert watch.observe({ROLLOUTS: (6, 9), ("feedback", 1): (0, 1)}, now=215) == [ROLLOUTS]
    assert "rollouts[0]: committed 6, 3 records waiting, no commit for 10s" in \
        watch.describe(ROLLOUTS, {ROLLOUTS: (6, 9)}, now=215)


def test_a_worker_stuck_on_a_partition_exits_to_be_restarted(kafka_bootstrap, kafka_admin, tmp_path):
    cfg = load_preset("full")
    settings = isolated_settings(agents=("feedback",), evaluator="tests.streams.hanging:evaluate_or_hang",
                                 pool_factory="tests.streams.hanging:no_pool", task_wait_s=1.0,
                                 stall_timeout_s=6.0, stall_check_s=1.0)
    app_id = unique("liveness")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    group = f"g-{uuid.uuid4().hex[:6]}"
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    try:
        with EventProducer(kafka_bootstrap) as producer:
            producer.send(settings.topics.tasks, "t1", "Task", task(task_id="t1"))
            for i in range(3):
                producer.send(settings.topics.rollouts, group, "Rollout", rollout(group, "t1", i, 4, "pass"))
        # a worker that keeps up lives on past the stall timeout
        assert len(read_all(kafka_bootstrap, settings.topics.feedback, 3, timeout_s=120, settle_s=12,
                            proc=worker)) == 3
        with EventProducer(kafka_bootstrap) as producer:
            producer.send(settings.topics.rollouts, group, "Rollout", rollout(group, "t1", 3, 4, HANG))
        assert worker.proc.wait(timeout=120) == STALLED_EXIT, worker.log_tail()
        log = worker.log.read_text()
        assert f"stalled: {settings.topics.rollouts}[" in log and "1 record waiting" in log, log[-2000:]
    finally:
        worker.stop()
