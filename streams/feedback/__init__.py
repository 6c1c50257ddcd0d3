"""From a rollout to its feedback event: run the candidate in the sandbox, read every signal."""

from streams.feedback.evaluate import EVALUATOR_VERSION, EvaluatorConfig, aevaluate_rollout, build_feedback, \
    evaluate_rollout

__all__ = ["EVALUATOR_VERSION", "EvaluatorConfig", "aevaluate_rollout", "build_feedback", "evaluate_rollout"]
