"""The dashboard's panels: which named query feeds each chart and how it is drawn. Pure.

A panel reuses the drift analysis where a drift query already answers its question (so
the page and ``reshaper drift`` can never disagree) and a query of its own otherwise.
Charts are described by the drift report's ``ChartSpec``; the page draws them with plotly.
"""

from __future__ import annotations

from dataclasses import dataclass

from consumers.drift.charts import CHARTS, ChartSpec


@dataclass(frozen=True)
class Panel:
    name: str
    query: str  # a name for consumers.dashboard.queries.sql_for
    chart: ChartSpec
    needs_config: bool = True  # shows the advantages of the chosen config


def _lines(title: str, x: str, y: tuple[str, ...], xlabel: str, ylabel: str = "", series: str | None = None):
    return ChartSpec("lines", title, x, y, xlabel, ylabel, series)


PANELS: tuple[Panel, ...] = (
    Panel("pass_rate", "drift:reward_by_version", _lines(
        "Pass rate by policy version", "policy_version", ("pass_rate", "full_success"), "policy version",
        "mean per rollout")),
    Panel("reward", "drift:reward_by_version", _lines(
        "Raw and enhanced reward by policy version", "policy_version", ("reward_raw_mean", "reward_enhanced_mean"),
        "policy version", "mean per rollout")),
    Panel("advantage_stats", "panel:advantage_stats", _lines(
        "Advantage statistics by policy version", "policy_version",
        ("advantage_mean", "advantage_std", "advantage_p05", "advantage_p95", "abs_advantage_mean"),
        "policy version", "advantage")),
    Panel("zero_variance", "panel:zero_variance", _lines(
        "Groups with zero reward variance", "policy_version", ("zero_variance_share",), "policy version",
        "share of groups")),
    # KL to the reference: NULL on the steps that did not measure it, so a gap, never a 0
    Panel("kl", "drift:learner_health", _lines(
        "KL to the reference policy (where measured) and its coefficient", "step", ("kl_ref", "kl_coef"),
        "learner step")),
    Panel("importance_weights", "drift:learner_health", _lines(
        "Importance weights: truncated and masked shares, clipping", "step",
        ("is_truncated_share", "is_masked_share", "clip_low_frac", "clip_high_frac"), "learner step", "share")),
    Panel("lag", "drift:learner_health", _lines(
        "Policy lag and stale drops", "step", ("lag_mean", "dropped_stale"), "learner step")),
    Panel("throughput", "panel:throughput", _lines(
        "Throughput", "window_start", ("feedback_per_s", "advantages_per_s"), "window start (UTC)", "events/s")),
    Panel("pattern_success", "drift:pattern_success", CHARTS["pattern_success"], needs_config=False),
    Panel("hack_rates", "drift:hack_rates", CHARTS["hack_rates"], needs_config=False),
    Panel("configs", "panel:configs_by_version", _lines(
        "Reshaping configs side by side", "policy_version", ("reward_enhanced_mean",), "policy version",
        "mean enhanced reward", series="config_id"), needs_config=False),
    Panel("review_agreement", "drift:review_agreement", CHARTS["review_agreement"], needs_config=False),
)
PANELS_BY_NAME = {panel.name: panel for panel in PANELS}
