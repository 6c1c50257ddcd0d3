"""Rollouts in, advantages out, through the feedback and reshape agents of one worker, with
the real evaluator in the bubblewrap sandbox."""

import uuid

import pytest

from infra.platform.kafka_io import EventProducer
from streams.app import ensure_app_topics
from streams.reshaping.config import PRESETS_DIR, load_preset
from streams.reshaping.pipeline import ReshapeState, reshape_group
from tests.streams.helpers import WorkerProcess, read_all, isolated_settings, unique

REFERENCE = "def add(a, b):\n    return a + b\n"
BUGGY = "def add(a, b):\n    return a - b\n"
HALF = "def add(a, b):\n    return a + b if b != 0 else 0\n"
TESTS = ["assert add(1, 1) == 2", "assert add(2, 0) == 2", "assert add(0, 3) == 3", "assert add(2, 2) == 4"]
# candidate -> expected pass fraction: the reference passes all, the bug only add(2, 0),
# the half-right version all but add(2, 0), a syntax error none.
CANDIDATES = {REFERENCE: 1.0, BUGGY: 0.25, HALF: 0.75, "def add(a, b) return": 0.0}
ERROR_KINDS = {REFERENCE: "none", BUGGY: "wrong_answer", HALF: "wrong_answer", "def add(a, b) return": "syntax"}
MISSING = "t-never-published"  # the group's last member names a task that never arrives


def task(task_id):
    return {"event_id": uuid.uuid4().hex, "created_at_ms": 1_700_000_000_000, "task_id": task_id,
            "function_id": "add", "source": "custom", "split": "train", "entry_point": "add",
            "reference_code": REFERENCE, "buggy_code": BUGGY, "tests": TESTS, "bug_pattern": "operator_swap",
            "difficulty": 0.2}


def rollout(group_id, task_id, index, size, code):
    return {"event_id": uuid.uuid4().hex, "created_at_ms": 1_700_000_000_000 + index,
            "rollout_id": f"{group_id}-{index}", "group_id": group_id, "task_id": task_id, "sample_index": index,
            "group_size": size, "policy_version": 1, "generator_id": "test", "prompt_template_version": "v1",
            "prompt_token_ids": [1, 2], "completion_token_ids": [3, 4, 5], "behaviour_logprobs": [-0.1, -0.2, -0.3],
            "completion_text": code, "finish_reason": "stop", "temperature": 1.0, "max_new_tokens": 64}


def test_rollouts_become_the_pure_cores_advantages(kafka_bootstrap, kafka_admin, tmp_path):
    cfg = load_preset("full")
    # the task races the rollouts on its own topic; on a loaded machine the worker may take seconds
    # to put it in its table, so the wait is long (only the missing-task rollouts sit it out)
    settings = isolated_settings(sandbox_workers=2, eval_concurrency=4, task_wait_s=20.0)
    app_id = unique("e2e")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    codes = list(CANDIDATES) + [REFERENCE]
    groups = {f"g{g}-{uuid.uuid4().hex[:6]}": codes for g in range(2)}
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    try:
        with EventProducer(kafka_bootstrap) as producer:
            producer.send(settings.topics.tasks, "t1", "Task", task("t1"))
            producer.send_raw(settings.topics.rollouts, b"poison", b"not avro")  # must be dead-lettered
            producer.send_raw(settings.topics.tasks, b"poison", b"not a task either")  # so must this
            for gid, members in groups.items():
                for i, code in enumerate(members):
                    task_id = MISSING if i == len(members) - 1 else "t1"
                    producer.send(settings.topics.rollouts, gid, "Rollout", rollout(gid, task_id, i, len(members), code))
        n = sum(len(m) for m in groups.values())
        advantages = read_all(kafka_bootstrap, settings.topics.advantages(cfg.config_id), n, proc=worker)
        feedback = read_all(kafka_bootstrap, settings.topics.feedback, n, settle_s=0.2, positions=True)
        dead = read_all(kafka_bootstrap, settings.topics.deadletter, 2, settle_s=0.2)
    finally:
        worker.stop()

    assert len(advantages) == n and len({a["rollout_id"] for a in advantages}) == n
    by_rid = {fb["rollout_id"]: fb for _, _, fb in feedback}
    for gid, members in groups.items():
        for i, code in enumerate(members[:-1]):
            fb = by_rid[f"{gid}-{i}"]
            outcome = (fb["pass_fraction_runs"], fb["error_kind"])
            assert outcome == ([CANDIDATES[code]], ERROR_KINDS[code]), fb["error_message"]
            assert (fb["environment_failure"], fb["evaluation_attempts"]) == (False, 1)
        # no task, no evaluation: the rollout still gets its feedback, so the group completes
        missing = by_rid[f"{gid}-{len(members) - 1}"]
        assert missing["error_kind"] == "sandbox" and missing["pass_fraction_runs"] == [0.0]
        assert missing["environment_failure"] is True  # the host's failure, not the candidate's
    assert sorted(d["source_topic"] for d in dead) == sorted([settings.topics.rollouts, settings.topics.tasks])

    # the pure core on the same feedback: per partition, groups in the order they completed
    expected = {}
    for partition in {p for p, _, _ in feedback}:
        rows = sorted((o, fb) for p, o, fb in feedback if p == partition)
        completion = {}
        for offset, fb in rows:
            completion[fb["group_id"]] = offset
        state = ReshapeState()
        for gid in sorted(completion, key=completion.get):
            records, state = reshape_group([fb for _, fb in rows if fb["group_id"] == gid], state, cfg, state.groups)
            expected.update({r["rollout_id"]: r for r in records})
    for adv in advantages:
        want = expected[adv["rollout_id"]]
        for field in ("advantage", "reward_enhanced", "global_mean"):
            assert adv[field] == pytest.approx(want[field], abs=1e-6), field
        assert adv["components"] == pytest.approx(want["components"], abs=1e-6)
        assert adv["group_complete"] and adv["config_id"] == cfg.config_id
