"""Off-policy-corrected GRPO learner: config, loss, batching, model, trainer, checkpoints.

May import: `schemas` and `infra.platform`. Never another service package or `infra.compose`.
"""
