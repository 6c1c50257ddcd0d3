"""A stored sample as the browser shows it: the code, the completion as a diff against the
buggy code, per-test outcomes, the reward broken down. Pure: rows in, dicts out.

The diff is ``difflib``'s unified diff of the buggy code and the code the sandbox ran from
the completion (``extract_code``), so a reviewer reads the edit the reward judged.
"""

from __future__ import annotations

import difflib
from typing import Any

from schemas.prompt import extract_code
from schemas.code_fingerprint import code_fingerprint


def completion_diff(buggy_code: str, completion_code: str) -> str:
    """The unified diff from the buggy code to the completion's code ('' when equal)."""
    return "".join(difflib.unified_diff(
        buggy_code.splitlines(keepends=True), completion_code.splitlines(keepends=True),
        fromfile="buggy", tofile="completion"))


def reward_breakdown(components: dict[str, float], weights: dict[str, float]) -> list[dict[str, Any]]:
    """One row per reward component: its value R_c, its weight w_c and what it added (w_c R_c)."""
    names = sorted(set(components) | set(weights))
    return [{"component": name, "value": components.get(name, 0.0), "weight": weights.get(name, 0.0),
             "contribution": components.get(name, 0.0) * weights.get(name, 0.0)} for name in names]


def sample_view(row: dict[str, Any]) -> dict[str, Any]:
    """What the sample browser shows of one row of a ``samples:`` query."""
    code = extract_code(row.get("completion_text") or "")
    return {
        **{k: v for k, v in row.items() if k not in ("components", "weights")},
        "completion_code": code,
        "diff": completion_diff(row.get("buggy_code") or "", code),
        "code_fingerprint": code_fingerprint(code) or "",
        "reward": reward_breakdown(row.get("components") or {}, row.get("weights") or {}),
        "tests": [{"index": o["index"], "passed": bool(o["passed"]), "error_kind": o["error_kind"],
                   "message": o["message"]} for o in (row.get("test_outcomes") or [])],
    }
