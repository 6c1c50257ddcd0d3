"""The evaluator's settings. They belong to the run, not to a reshaping config: feedback is
computed once, before any reshaping applies, so a replay under other rules reads the same
feedback. The run config has them as its `evaluator:` section and hands them to the worker."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field

from streams.signals.config import SignalConfig


class EvaluatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repeats: int = Field(
        1, ge=1, le=16, description="times the hidden tests run, each in a fresh candidate process with `random` "
                                    "seeded from (rollout seed, repeat index); >1 shows flaky candidates as spread "
                                    "between runs (`pass_fraction_runs`, `flaky`)")
    environment_retries: int = Field(
        2, ge=0, le=8, description="re-evaluations of a run the host, not the candidate, failed (a sandbox error "
                                   "after the pool's own retry, a lost sandbox process, a harness error); still "
                                   "failing after them, the feedback says `environment_failure`")
    adversarial_inputs: int = Field(8, ge=0, description="random inputs (boundaries first) from the tests' domain, "
                                                          "compared with the reference; 0 = off")
    rename_check: bool = Field(True, description="re-run the tests after a harmless rename of the entry point, its "
                                                 "parameters and locals (the tests' keyword arguments follow)")
    exec_coverage: bool = Field(
        True, description="trace, in the first run of the hidden tests, which lines of the candidate's functions each "
                          "test runs, for `exec_line_coverage` (a claim of the candidate's own process: counted only "
                          "on tests that pass, voided by tracer use); off: the field stays 0")
    timeout_s: float | None = Field(None, description="per-candidate wall clock; default: the sandbox's")
    carry_task_imports: bool = Field(
        True, description="give the candidate the task's module-level imports it uses and lacks "
                          "(schemas/prompt.py); off only to measure what that rule changes")
    signals: SignalConfig = Field(default_factory=SignalConfig)

    @property
    def version(self) -> str:
        """Evaluator version: the code revision plus a hash of these knobs."""
        return f"eval-v3-{hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:8]}"
