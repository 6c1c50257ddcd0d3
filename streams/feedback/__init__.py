"""From a rollout to its feedback event: run the candidate in the sandbox, read every signal."""

from streams.feedback.evaluate import EVALUATOR_VERSION, EvaluatorConfig, SandboxRuns, aevaluate_rollout, \
    asandbox_runs, build_feedback, evaluate_rollout, robustness_fields

__all__ = ["EVALUATOR_VERSION", "EvaluatorConfig", "SandboxRuns", "aevaluate_rollout", "asandbox_runs",
           "build_feedback", "evaluate_rollout", "robustness_fields"]
