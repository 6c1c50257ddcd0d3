"""Feedback records for the reshaping tests: groups of rollouts told apart by their pass fractions."""

from __future__ import annotations

from typing import Any

from tests.factories import feedback


def make_feedback(
    sample_index: int,
    pass_fraction_runs: list[float],
    *,
    group_id: str = "g1",
    group_size: int = 4,
    **overrides: Any,
) -> dict[str, Any]:
    return feedback(**{
        "event_id": f"fb-{group_id}-{sample_index}", "created_at_ms": 1_000_000 + sample_index,
        "rollout_id": f"{group_id}-r{sample_index}", "group_id": group_id, "sample_index": sample_index,
        "group_size": group_size, "repeats": len(pass_fraction_runs),
        "tests_passed": round(4 * pass_fraction_runs[0]) if pass_fraction_runs else 0,
        "pass_fraction_runs": list(pass_fraction_runs), "tree_edit_distance": 0.2, **overrides})


def make_group(pass_fractions: list[float], **overrides: Any) -> list[dict[str, Any]]:
    """One rollout per pass fraction (a single run each), group_size = len unless overridden."""
    overrides.setdefault("group_size", len(pass_fractions))
    return [make_feedback(i, [p], **overrides) for i, p in enumerate(pass_fractions)]
