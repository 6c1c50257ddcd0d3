"""Producers of events: the task corpus, the rollout generator, and held-out evaluation.

May import: `schemas`, `infra.platform`, and (evaluation, corpus tests) `streams` and `learner`
configs. Never `infra.compose`.
"""
