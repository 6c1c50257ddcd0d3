"""Knobs of a corpus build."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from producers.corpus.mutators import ALL_PATTERNS, MUTATORS


class CorpusBuildConfig(BaseModel):
    """Everything that decides the content of a corpus: same config -> same file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = Field(0, description="Seed of the split and of the bug-site choices.")
    validation_fraction: float = Field(
        0.2, ge=0.0, le=1.0, description="Share of MBPP functions put in the validation split.")
    patterns: tuple[str, ...] = Field(
        ALL_PATTERNS, min_length=1, description="Bug patterns to inject, by mutator name.")
    mutants_per_function_per_pattern: int = Field(
        1, ge=1, description="Bugs wanted for each function and pattern (fewer if too few sites).")
    max_attempts_per_mutant: int = Field(
        3, ge=1, description="Candidate sites run per wanted bug before giving up on it: "
                             "a mutant that passes every test is rejected and the next is tried.")
    max_functions: int | None = Field(
        None, ge=1, description="Use only the first N functions of each source (None = all).")
    include_humaneval: bool = Field(
        True, description="Add HumanEval bugs as the held-out evaluation split.")
    heldout_patterns: tuple[str, ...] = Field(
        (), description="Bug patterns held out of training: injected into validation functions only, "
                        "whose tasks of these patterns get the split `heldout_pattern` (function and pattern "
                        "both unseen in training); train functions get no bug of them. Must be among "
                        "`patterns`, leaving at least one for training. HumanEval keeps every pattern.")
    visible_failing_test: bool = Field(
        True, description="Show one failing test: a bug that fails at least two tests moves the first it "
                          "fails from `tests` (hidden, scored) to `visible_tests`, with what went wrong "
                          "there as `error_context`; other bugs keep every test hidden. False keeps every "
                          "test hidden and no error context.")
    eval_workers: int = Field(2, ge=1, description="Sandbox worker processes.")
    eval_timeout_s: float = Field(
        5.0, gt=0, description="Time limit per test run; a mutant that runs out counts as failing.")

    @field_validator("patterns")
    @classmethod
    def _known_patterns(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [p for p in patterns if p not in MUTATORS]
        if unknown:
            raise ValueError(f"unknown bug patterns {unknown}; known: {list(MUTATORS)}")
        if len(set(patterns)) != len(patterns):
            raise ValueError(f"bug patterns listed twice: {list(patterns)}")
        return patterns

    @model_validator(mode="after")
    def _heldout_among_patterns(self) -> "CorpusBuildConfig":
        heldout = self.heldout_patterns
        if len(set(heldout)) != len(heldout):
            raise ValueError(f"held-out patterns listed twice: {list(heldout)}")
        if not set(heldout) <= set(self.patterns):
            raise ValueError(f"held-out patterns {sorted(set(heldout) - set(self.patterns))} are not among "
                             f"the injected patterns {list(self.patterns)}")
        if heldout and set(heldout) == set(self.patterns):
            raise ValueError("every pattern is held out: training would get no task")
        return self
