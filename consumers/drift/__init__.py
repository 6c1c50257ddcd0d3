"""Drift analysis in SQL: named queries over the event store, printed, charted, judged."""

from consumers.drift.cli import drift, drift_names
from consumers.drift.queries import (
    FAR_PAST,
    BadSinceError,
    DriftError,
    DriftQuery,
    MissingParameterError,
    UnknownQueryError,
    load_query,
    parse_since,
    query_names,
)
from consumers.drift.report import DriftReport, run_drift
from consumers.drift.rules import DriftFlag, HackingRule, judge_proxy_trend, slope

__all__ = [
    "FAR_PAST",
    "BadSinceError",
    "DriftError",
    "DriftFlag",
    "DriftQuery",
    "DriftReport",
    "HackingRule",
    "MissingParameterError",
    "UnknownQueryError",
    "drift",
    "drift_names",
    "judge_proxy_trend",
    "load_query",
    "parse_since",
    "query_names",
    "run_drift",
    "slope",
]
