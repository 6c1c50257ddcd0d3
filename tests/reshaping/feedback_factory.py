"""Hand-made feedback records for the reshaping tests (fields of schemas/feedback.avsc)."""

from __future__ import annotations

from typing import Any


def make_feedback(
    sample_index: int,
    pass_fraction_runs: list[float],
    *,
    group_id: str = "g1",
    group_size: int = 4,
    **overrides: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "event_id": f"fb-{group_id}-{sample_index}",
        "schema_version": 1,
        "created_at_ms": 1_000_000 + sample_index,
        "rollout_id": f"{group_id}-r{sample_index}",
        "group_id": group_id,
        "task_id": "task-7",
        "bug_pattern": "off_by_one",
        "difficulty": 0.5,
        "sample_index": sample_index,
        "group_size": group_size,
        "policy_version": 0,
        "evaluator_version": "ev1",
        "repeats": len(pass_fraction_runs),
        "tests_total": 4,
        "tests_passed": round(4 * pass_fraction_runs[0]) if pass_fraction_runs else 0,
        "pass_fraction_runs": list(pass_fraction_runs),
        "test_outcomes": [],
        "error_kind": "none",
        "error_message": "",
        "runtime_ms": 12.0,
        "tree_edit_distance": 0.2,
        "tree_edit_distance_raw": 3,
        "style_class": "clean",
        "flake8_codes": [],
        "hack_flags": [],
        "cyclomatic_complexity": 2,
        "fixed_pattern": "",
        "adversarial_mismatches": 0,
        "adversarial_checked": 0,
        "rename_passed": None,
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [4, 5],
        "behaviour_logprobs": [-0.5, -1.25],
        "finish_reason": "stop",
        "completion_text": "def f(x):\n    return x\n",
    }
    record.update(overrides)
    return record


def make_group(pass_fractions: list[float], **overrides: Any) -> list[dict[str, Any]]:
    """One rollout per pass fraction (a single run each), group_size = len unless overridden."""
    overrides.setdefault("group_size", len(pass_fractions))
    return [make_feedback(i, [p], **overrides) for i, p in enumerate(pass_fractions)]
