"""Stream processing: the sandbox, the feedback signals, the reshaping core, the Faust agents and
the replay.

May import: `schemas` and `infra.platform`. Never another service package or `infra.compose`.
"""
