"""Tasks at the policy's frontier: draw mostly where a group can hold both a pass and a fail.

A group whose samples all fail (or all pass) has zero reward variance, so plain GRPO learns
nothing from it. Each task's pass rate is measured on the policy's own samples (a success is
a sample that passes every test) and kept over the last `window` samples, so the rate moves
as the policy improves. A pick comes from the learnable band (low < rate < high) with
probability `share`, less while the band is smaller than `min_band` (one task drawn at that
share would be most of the training: a run with a band of one spent 92 of 165 groups on
it); otherwise from the tasks not measured yet (a group of K samples is one
measurement); with neither, from the difficulty curriculum.

Pure: `TaskRates` folds scored samples, `pick_frontier` chooses; the generator feeds both
from the advantage stream it already follows.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field, model_validator


class FrontierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="draw tasks from the learnable band instead of the curriculum alone")
    low: float = Field(0.0, ge=0.0, lt=1.0, description="band: pass rate strictly above this")
    high: float = Field(1.0, gt=0.0, le=1.0, description="band: pass rate strictly below this")
    share: float = Field(0.75, ge=0.0, le=1.0, description="share of picks from the band when it is not empty")
    min_band: int = Field(8, ge=1, description="below this many band tasks the band's share shrinks in "
                          "proportion, so a small band is not drawn over and over while tasks are unmeasured")
    window: int = Field(16, ge=1, description="a task's rate is over its last `window` samples")
    min_samples: int = Field(4, ge=1, description="samples before a task's rate counts (one group of K)")

    @model_validator(mode="after")
    def _band_not_empty(self) -> FrontierConfig:
        if self.low >= self.high:
            raise ValueError(f"the band needs low < high, got low={self.low}, high={self.high}")
        return self


class TaskRates:
    """Per task, the outcomes of its most recent samples (each rollout counted once)."""

    def __init__(self, window: int):
        self.window = window
        self._outcomes: dict[str, deque[bool]] = {}
        self._seen: set[str] = set()

    def add(self, rollout_id: str, task_id: str, passed: bool) -> None:
        if rollout_id in self._seen:  # a record delivered twice is one sample
            return
        self._seen.add(rollout_id)
        self._outcomes.setdefault(task_id, deque(maxlen=self.window)).append(bool(passed))

    def samples(self, task_id: str) -> int:
        return len(self._outcomes.get(task_id, ()))

    def rate(self, task_id: str) -> float | None:
        outcomes = self._outcomes.get(task_id)
        return sum(outcomes) / len(outcomes) if outcomes else None


def frontier_band(tasks_by_id: dict[str, dict], rates: TaskRates, cfg: FrontierConfig) -> list[dict]:
    """The measured tasks with low < pass rate < high (sorted by id, so seeded picks repeat)."""
    band = []
    for task_id in sorted(tasks_by_id):
        rate = rates.rate(task_id)
        if rates.samples(task_id) >= cfg.min_samples and cfg.low < rate < cfg.high:
            band.append(tasks_by_id[task_id])
    return band


def unmeasured(tasks_by_id: dict[str, dict], rates: TaskRates, cfg: FrontierConfig) -> list[dict]:
    return [tasks_by_id[t] for t in sorted(tasks_by_id) if rates.samples(t) < cfg.min_samples]


def band_sizes_by_pattern(band: list[dict]) -> dict[str, int]:
    return dict(sorted(Counter(t["bug_pattern"] for t in band).items()))


def pick_frontier(tasks_by_id: dict[str, dict], rates: TaskRates, cfg: FrontierConfig, rng: random.Random,
                  fallback: Callable[[], dict]) -> dict:
    """A band task with probability `share` (scaled down by len(band) / min_band for a small
    band), else an unmeasured task, else `fallback()`."""
    band = frontier_band(tasks_by_id, rates, cfg)
    if band and rng.random() < cfg.share * min(1.0, len(band) / cfg.min_band):
        return rng.choice(band)
    fresh = unmeasured(tasks_by_id, rates, cfg)
    if fresh:
        return rng.choice(fresh)
    return rng.choice(band) if band else fallback()
