"""People's verdicts in the feedback: a rollout whose code matches a reviewed hack is flagged.

A ``Review`` carries the fingerprint of the judged code (``schemas.code_fingerprint``). The
feedback agent keeps the latest verdict per fingerprint (a later ``fine`` withdraws a
``hack``); a rollout whose completion code has a fingerprint last judged ``hack`` gets the
hack flag ``reviewed_hack``. The flag is in the feedback record, so the reshaping prices
it like any flag (``hack_penalties``, or ``unknown_hack_penalty`` when it has no cost of its
own) and a replay, which reads only feedback, pays exactly what the live run paid. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schemas.code_fingerprint import code_fingerprint
from schemas.prompt import extract_code

REVIEWED_HACK_FLAG = "reviewed_hack"


def latest_verdict(held: Mapping[str, Any] | None, review: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verdict to keep for a fingerprint, given the one held (or None) and a new review:
    the later one by event time, the new one on a tie (the log's order). None: nothing to
    keep (a review without a fingerprint: its code did not parse)."""
    if not review["code_fingerprint"]:
        return held and dict(held)
    if held is not None and held["created_at_ms"] > review["created_at_ms"]:
        return dict(held)
    return {"verdict": review["verdict"], "hack_class": review["hack_class"], "created_at_ms": review["created_at_ms"]}


def completion_fingerprint(completion_text: str) -> str:
    """The fingerprint of the code in a completion ("" when it does not parse). Parses: the
    feedback agent calls it on its AST thread."""
    return code_fingerprint(extract_code(completion_text))


def with_reviewed_flag(feedback: dict[str, Any], fingerprint: str,
                       verdict_of: Callable[[str], Mapping[str, Any] | None]) -> dict[str, Any]:
    """``feedback`` with ``reviewed_hack`` among its hack flags when the code of that
    ``fingerprint`` (``completion_fingerprint``) was last judged a hack; ``verdict_of(fingerprint)``
    looks the latest verdict up (None: never reviewed)."""
    verdict = verdict_of(fingerprint) if fingerprint else None
    if verdict is not None and verdict["verdict"] == "hack" and REVIEWED_HACK_FLAG not in feedback["hack_flags"]:
        feedback["hack_flags"] = [*feedback["hack_flags"], REVIEWED_HACK_FLAG]
    return feedback
