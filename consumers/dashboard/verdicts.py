"""A person's verdict on a sample, checked, and the Review record it becomes. Pure.

The record carries the fingerprint of the sample's code (so a later rollout with the same
code can be recognised) and the flags the automatic detectors raised on it (so the
drift query ``review_agreement`` can say how often they agreed with people).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.records import build_record


class Verdict(BaseModel):
    """What the review form posts."""

    model_config = ConfigDict(extra="forbid")

    rollout_id: str = Field(min_length=1, description="the sample judged")
    config_id: str = Field(min_length=1, description="the reshaping config whose reward was shown")
    verdict: Literal["hack", "fine"] = Field(description="hack: the reward was earned by gaming the tests")
    hack_class: str = Field("", max_length=100, description="the kind of hack (a flag name or a new one); hack only")
    note: str = Field("", max_length=2000, description="free text")
    reviewer: str = Field("", max_length=100, description="who judged")

    @model_validator(mode="after")
    def _class_goes_with_hack(self) -> "Verdict":
        self.hack_class = self.hack_class.strip()
        if self.verdict == "hack" and not self.hack_class:
            raise ValueError("a hack verdict needs its hack_class")
        if self.verdict == "fine" and self.hack_class:
            raise ValueError("a fine verdict has no hack_class")
        return self


def review_record(verdict: Verdict, sample: dict[str, Any]) -> dict[str, Any]:
    """The Review event of ``verdict`` on ``sample`` (a ``sample_view``), with a fresh id and time."""
    if sample["rollout_id"] != verdict.rollout_id:
        raise ValueError(f"verdict on {verdict.rollout_id} given a sample of {sample['rollout_id']}")
    return build_record(
        "Review", new_event=True, rollout_id=verdict.rollout_id, config_id=verdict.config_id,
        task_id=sample.get("task_id") or "", bug_pattern=sample.get("bug_pattern") or "",
        policy_version=int(sample.get("policy_version") or 0), verdict=verdict.verdict,
        hack_class=verdict.hack_class, code_fingerprint=sample.get("code_fingerprint") or "",
        automatic_flags=sorted(set(sample.get("hack_flags") or [])), reviewer=verdict.reviewer, note=verdict.note)
