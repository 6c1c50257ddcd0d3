"""Complete records of every payload, for tests (built with ``schemas.records.build_record``).

Each factory gives a valid record of one rollout of group ``g0`` on task ``t0``: every
required field has a plain value, and the fields a test passes replace them. A field the
schema lacks is refused, so a factory call that drifts from schemas/*.avsc fails where it
is made. ``roundtrip`` sends a record through the real codec, for tests that need the
values as a consumer reads them (floats at the precision Avro stores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.codec import decode, encode
from schemas.records import build_record

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC, in ms
ENVELOPE = {"event_id": "ev000000", "created_at_ms": T0}


def _tokens() -> dict[str, Any]:
    """The generation fields Rollout, Feedback and Advantage share (new lists for every record)."""
    return {"prompt_token_ids": [1, 2, 3], "completion_token_ids": [4, 5], "behaviour_logprobs": [-0.5, -1.5],
            "finish_reason": "stop"}


def roundtrip(payload: str, record: dict[str, Any]) -> dict[str, Any]:
    return decode(encode(payload, record))


def task(**fields: Any) -> dict[str, Any]:
    return build_record("Task", **{
        **ENVELOPE, "task_id": "t0", "function_id": "f0", "source": "mbpp", "split": "train", "entry_point": "f",
        "reference_code": "def f(x):\n    return x + 1\n", "buggy_code": "def f(x):\n    return x\n",
        "tests": ["assert f(1) == 2"], "bug_pattern": "off_by_one", "difficulty": 0.25, **fields})


def rollout(**fields: Any) -> dict[str, Any]:
    return build_record("Rollout", **{
        **ENVELOPE, "rollout_id": "r0", "group_id": "g0", "task_id": "t0", "sample_index": 0, "group_size": 4,
        "policy_version": 0, "generator_id": "hf-0", "prompt_template_version": "v1", **_tokens(),
        "completion_text": "return x + 1", "temperature": 1.0, "max_new_tokens": 64, **fields})


def run_fields(passed: Sequence[bool], runtime_ms: float = 1.0) -> dict[str, Any]:
    """The Feedback fields of one run whose tests came out as ``passed`` (counts, pass
    fraction, one outcome per test, error kind), consistent with each other."""
    return {
        "repeats": 1, "tests_total": len(passed), "tests_passed": sum(passed),
        "pass_fraction_runs": [sum(passed) / len(passed)],
        "test_outcomes": [{"index": i, "passed": ok, "error_kind": "none" if ok else "wrong_answer",
                           "runtime_ms": runtime_ms} for i, ok in enumerate(passed)],
        "error_kind": "none" if all(passed) else "wrong_answer",
    }


def feedback(**fields: Any) -> dict[str, Any]:
    """One run of 4 tests, all passed (no per-test outcomes unless given; see ``run_fields``)."""
    return build_record("Feedback", **{
        **ENVELOPE, "rollout_id": "r0", "group_id": "g0", "task_id": "t0", "bug_pattern": "off_by_one",
        "difficulty": 0.5, "sample_index": 0, "group_size": 4, "policy_version": 0, "evaluator_version": "e1",
        "repeats": 1, "tests_total": 4, "tests_passed": 4, "pass_fraction_runs": [1.0], "test_outcomes": [],
        "error_kind": "none", "runtime_ms": 3.0, "tree_edit_distance": 0.125, "style_class": "clean", **_tokens(),
        **fields})


# the reward and statistics fields of an Advantage, all 0.25 unless given
ADVANTAGE_FLOATS = ("reward_raw", "reward_enhanced", "reward_normalised", "ema_baseline", "global_mean", "global_std",
                    "group_mean", "group_std")


def advantage(**fields: Any) -> dict[str, Any]:
    """The advantage of a complete group of 4 under config ``base``."""
    return build_record("Advantage", **{
        **ENVELOPE, **dict.fromkeys(ADVANTAGE_FLOATS, 0.25), "config_id": "base", "rollout_id": "r0",
        "feedback_event_id": "fb0", "group_id": "g0", "task_id": "t0", "bug_pattern": "off_by_one",
        "sample_index": 0, "group_size": 4, "group_members": 4, "group_complete": True, "policy_version": 0,
        "advantage": 0.5, "global_count": 10, "warmup": False, "components": {"test": 0.25}, "weights": {"test": 1.0},
        **_tokens(), **fields})


def policy_version(**fields: Any) -> dict[str, Any]:
    return build_record("PolicyVersion", **{
        **ENVELOPE, "version": 1, "learner_step": 10, "location": "/ckpt/1", "sha256": "ab" * 32,
        "base_model": "tiny", **fields})


def metric(**fields: Any) -> dict[str, Any]:
    return build_record("Metric", **{**ENVELOPE, "source": "learner", "step": 0, "values": {"loss": 0.5}, **fields})


def dead_letter(**fields: Any) -> dict[str, Any]:
    return build_record("DeadLetter", **{
        **ENVELOPE, "source_topic": "feedback", "source_partition": 0, "source_offset": 0, "consumer": "store",
        "error_type": "MalformedRecordError", "error_message": "bad magic", **fields})


def review(**fields: Any) -> dict[str, Any]:
    return build_record("Review", **{**ENVELOPE, "rollout_id": "r-0", "verdict": "fine", "code_fingerprint": "",
                                     **fields})
