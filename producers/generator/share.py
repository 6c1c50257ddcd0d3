"""Several generators feeding one learner: each takes its part of the run's group budget.

The budget is counted in groups: the pacing bound (how many groups the newest policy version
allows), the in-flight cap and `max_groups`. Each generator counts only its own groups, so
without a share N generators would each produce what one should, N times the run's budget.
The parts are whole groups, dealt round-robin (the k-th group of a budget goes to generator
k mod N): they sum to the budget for every total, and each part grows with it.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class GroupShare(BaseModel):
    """This generator's part of the run's group budget: part `index` of `of`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(0, ge=0, description="which generator of the run this is (0-based).")
    of: int = Field(1, ge=1, description="how many generators share the run's budget; 1: all of it.")

    @model_validator(mode="after")
    def _index_in_range(self) -> "GroupShare":
        if self.index >= self.of:
            raise ValueError(f"generator index {self.index} is not below the number of generators {self.of}")
        return self

    def part(self, total: int) -> int:
        """The groups of `total` this generator takes: those k < total with k mod `of` == `index`."""
        return max(0, (total - self.index + self.of - 1) // self.of)


def generator_seed(run_seed: int, index: int) -> int:
    """The sampling seed of a run's generator `index`: the run seed for the first, so one
    generator samples as it always has; for the others a seed drawn from (run seed, index)
    by numpy's SeedSequence, far from the first one's (its batches use seed + batch number)."""
    if index == 0:
        return run_seed
    return int(np.random.SeedSequence([run_seed, index]).generate_state(1, dtype=np.uint32)[0] >> 1)
