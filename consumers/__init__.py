"""Consumers of the log: the ClickHouse store, the sink and the drift analysis.

May import: `schemas` and `infra.platform`. Never another service package or `infra.compose`.
"""
