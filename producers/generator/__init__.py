"""The rollout generator: the policy model, its prompt, and the engines that sample it."""
