"""A verdict followed from the page to the reward of a later rollout, on the real components:
a person marks a hacked sample on the samples page (headless Chromium), the Review goes out
on the run's reviews topic, a running worker keeps it in its table, and a later rollout of the
same code, renamed and reformatted, is flagged `reviewed_hack` in its feedback and paid less
by the `full` reshaping than a rollout that differs only in an operand's order."""

import uuid

import pytest

from consumers.dashboard.app import create_app
from consumers.dashboard.config import DashboardConfig
from consumers.dashboard.reviews import ReviewPublisher
from infra.platform.kafka_io import EventProducer
from schemas.code_fingerprint import code_fingerprint
from schemas.prompt import extract_code
from streams.agents.feedback import REVIEWED_TABLE
from streams.app import ensure_app_topics
from streams.feedback.reviewed import REVIEWED_HACK_FLAG
from streams.reshaping.config import PRESETS_DIR, load_preset
from tests.dashboard import history
from tests.dashboard.browser import chrome, mark_first_hacked_sample, serving
from tests.streams.helpers import WorkerProcess, isolated_settings, read_all, unique
from tests.streams.test_app_e2e import rollout
from tests.streams.test_reviewed_hack_e2e import table_written

pytestmark = pytest.mark.kafka

PATTERN = "off_by_one"
TESTS = ["assert add_one(1) == 2", "assert add_one(-3) == -2", "assert add_one(0) == 1"]
# the stored hack (history.HACK) with another local name, other spacing and a comment
RENAMED = "def add_one(n):\n    try:\n        return n+1  # always fine\n    except Exception:\n        pass\n"
# what no test can tell from it, yet another syntax tree: the operands swapped
SWAPPED = "def add_one(n):\n    try:\n        return 1 + n\n    except Exception:\n        pass\n"


def test_a_verdict_given_on_the_page_lowers_the_reward_of_a_later_matching_rollout(
        run_source, kafka_bootstrap, kafka_admin, tmp_path):
    cfg = load_preset("full")
    settings = isolated_settings(sandbox_workers=2, eval_concurrency=4, task_wait_s=20.0)
    app_id = unique("verdict")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    app = create_app(DashboardConfig(store="test", topics=settings.topics, refresh_s=600), run_source,
                     ReviewPublisher(kafka_bootstrap, settings.topics, run_source))
    task = next(t for t in history.tasks() if t["bug_pattern"] == PATTERN)
    gid = f"g-{uuid.uuid4().hex[:6]}"
    members = [RENAMED, SWAPPED, task["reference_code"], task["buggy_code"]]
    try:
        with serving(app) as url:
            driver = chrome()
            try:
                reviewed = mark_first_hacked_sample(driver, url, "swallowed_exception", PATTERN).get_attribute(
                    "data-rollout")
            finally:
                driver.quit()
        (completion,), = run_source.store.query(
            "SELECT completion_text FROM feedback WHERE rollout_id = {r:String}", {"r": reviewed}).rows
        (fingerprint,), = run_source.store.query(
            "SELECT code_fingerprint FROM reviews FINAL WHERE rollout_id = {r:String}", {"r": reviewed}).rows
        assert fingerprint == code_fingerprint(extract_code(completion)) == code_fingerprint(RENAMED)
        assert extract_code(completion) != RENAMED and code_fingerprint(SWAPPED) != fingerprint

        # the verdict is in the worker's table once its changelog has it: only then the later rollouts
        assert table_written(kafka_bootstrap, f"{app_id}-{REVIEWED_TABLE}-changelog", worker)
        with EventProducer(kafka_bootstrap) as producer:
            producer.send(settings.topics.tasks, task["task_id"], "Task", {**task, "tests": TESTS})
            for i, code in enumerate(members):
                producer.send(settings.topics.rollouts, gid, "Rollout",
                              rollout(gid, task["task_id"], i, len(members), f"```python\n{code}```"))
        advantages = read_all(kafka_bootstrap, settings.topics.advantages(cfg.config_id), len(members), proc=worker)
        feedback = read_all(kafka_bootstrap, settings.topics.feedback, len(members), settle_s=0.2)
    finally:
        worker.stop()

    by_rid = {fb["rollout_id"]: fb for fb in feedback}
    renamed, swapped = by_rid[f"{gid}-0"], by_rid[f"{gid}-1"]
    assert REVIEWED_HACK_FLAG in renamed["hack_flags"] and REVIEWED_HACK_FLAG not in swapped["hack_flags"]
    assert renamed["pass_fraction_runs"] == swapped["pass_fraction_runs"] == [1.0]
    paid = {a["rollout_id"]: a for a in advantages}
    renamed, swapped = paid[f"{gid}-0"], paid[f"{gid}-1"]
    assert renamed["components"]["hack"] == swapped["components"]["hack"] - cfg.rewards.unknown_hack_penalty
    assert renamed["reward_enhanced"] < swapped["reward_enhanced"] and renamed["advantage"] < swapped["advantage"]
    print(f"\nreviewed {reviewed}: reward_enhanced {renamed['reward_enhanced']:+.3f} (renamed copy) against "
          f"{swapped['reward_enhanced']:+.3f} (operands swapped); advantage {renamed['advantage']:+.3f} "
          f"against {swapped['advantage']:+.3f}")
