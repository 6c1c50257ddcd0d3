"""Off-policy-corrected GRPO learner: config, loss, batching, model, trainer, checkpoints."""
