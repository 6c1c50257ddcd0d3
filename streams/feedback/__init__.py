"""From a rollout to its feedback event: run the candidate in the sandbox, read every signal.

`EvaluatorConfig` imports light; the evaluator's names load on first use (PEP 562), since
they bring the sandbox and the signal libraries, which a config reader never needs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streams.feedback.config import EvaluatorConfig

_EVALUATE = ("EVALUATOR_VERSION", "SandboxRuns", "aevaluate_rollout", "asandbox_runs", "build_feedback",
             "evaluate_rollout", "robustness_fields")
__all__ = ["EVALUATOR_VERSION", "EvaluatorConfig", "SandboxRuns", "aevaluate_rollout", "asandbox_runs",
           "build_feedback", "evaluate_rollout", "robustness_fields"]

if TYPE_CHECKING:
    from streams.feedback.evaluate import (EVALUATOR_VERSION, SandboxRuns, aevaluate_rollout, asandbox_runs,
                                           build_feedback, evaluate_rollout, robustness_fields)


def __getattr__(name: str) -> Any:
    if name not in _EVALUATE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("streams.feedback.evaluate"), name)
    globals()[name] = value
    return value
