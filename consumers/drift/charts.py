"""One chart per drift query, drawn with matplotlib (Agg: no display needed).

A ``ChartSpec`` says how a query's rows become a picture:
  * ``lines``: y columns against x, or with ``series`` one line per value of that column;
  * ``panels``: one small line plot per y column (metrics of very different scales);
  * ``bars``: grouped bars, one group per y column, one bar per row (a summary table).
NULL values leave gaps in a line rather than dropping it to zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

import matplotlib

matplotlib.use("Agg")  # must precede pyplot: reports are written on headless machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


@dataclass(frozen=True)
class ChartSpec:
    kind: Literal["lines", "panels", "bars"]
    title: str
    x: str
    y: tuple[str, ...]
    xlabel: str
    ylabel: str = ""
    series: str | None = None  # lines: one line per distinct value of this column


_REWARD_LINES = ("pass_rate", "full_success", "reward_raw_mean", "reward_enhanced_mean", "advantage_mean")

CHARTS: dict[str, ChartSpec] = {
    "reward_by_version": ChartSpec(
        "lines", "Pass rate and reshaped reward by policy version", "policy_version", _REWARD_LINES,
        "policy version", "mean per rollout",
    ),
    "reward_by_window": ChartSpec(
        "lines", "Pass rate and reshaped reward over time", "window_start", _REWARD_LINES,
        "window start (UTC)", "mean per rollout",
    ),
    "pattern_success": ChartSpec(
        "lines", "Full success per bug pattern over time", "window_start", ("full_success",),
        "window start (UTC)", "share of rollouts passing every test", series="bug_pattern",
    ),
    "hack_rates": ChartSpec(
        "lines", "Reward-hack flag rates over time", "window_start", ("rate",),
        "window start (UTC)", "share of feedback rows flagged", series="flag",
    ),
    "proxy_vs_heldout": ChartSpec(
        "lines", "Proxy reward vs held-out success by policy version", "policy_version",
        ("proxy_reward", "heldout_success"), "policy version", "value",
    ),
    "config_compare": ChartSpec(
        "bars", "Reshaping configs on the same rollouts", "config_id",
        ("advantage_mean", "advantage_std", "zero_group_share", "corr_advantage_raw"), "statistic", "value",
    ),
    "evaluation_reliability": ChartSpec(
        "lines", "Environment failures and flaky candidates by policy version", "policy_version",
        ("environment_failure_rate", "flaky_rate"), "policy version", "share of feedback rows",
    ),
    "excluded_by_version": ChartSpec(
        "lines", "Rollouts and groups left out of the comparison by policy version", "policy_version",
        ("excluded_share", "uncompared_group_share"), "policy version", "share",
    ),
    "learner_health": ChartSpec(
        "panels", "Learner health by step", "step",
        ("kl_ref", "kl_coef", "is_truncated_share", "is_masked_share", "clip_low_frac", "clip_high_frac", "lag_mean",
         "dropped_stale", "grad_norm"),
        "learner step",
    ),
    "review_agreement": ChartSpec(
        "bars", "People's verdicts and the automatic detectors", "label",
        ("reviews", "detector_flagged", "agreed"), "count", "reviewed rollouts",
    ),
}


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _integer_ticks(ax, xs: Sequence[Any]) -> None:
    # versions and steps are whole numbers: no 0.5 ticks between them
    if xs and all(isinstance(x, int) for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _lines(ax, spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> None:
    if spec.series is None:
        xs = [r[spec.x] for r in rows]
        for column in spec.y:
            ax.plot(xs, [_number(r[column]) for r in rows], marker="o", label=column)
    else:
        for name in sorted({str(r[spec.series]) for r in rows}):
            mine = [r for r in rows if str(r[spec.series]) == name]
            ax.plot([r[spec.x] for r in mine], [_number(r[spec.y[0]]) for r in mine], marker="o", label=name)
    _integer_ticks(ax, [r[spec.x] for r in rows])
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def _bars(ax, spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> None:
    width = 0.8 / len(rows)
    for i, row in enumerate(rows):
        positions = [k + i * width for k in range(len(spec.y))]
        ax.bar(positions, [_number(row[c]) for c in spec.y], width, label=str(row[spec.x]))
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(spec.y))], spec.y, fontsize="small")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.legend(title=spec.x, fontsize="small")


def draw(name: str, rows: Sequence[dict[str, Any]], path: Path, subtitle: str = "") -> Path:
    """Write the chart of query ``name`` over ``rows`` (non-empty dicts) to ``path`` (PNG)."""
    spec = CHARTS[name]
    title = f"{spec.title}\n{subtitle}" if subtitle else spec.title
    if spec.kind == "panels":
        columns = 4
        panel_rows = math.ceil(len(spec.y) / columns)
        fig, axes = plt.subplots(panel_rows, columns, figsize=(16, 3.5 * panel_rows), squeeze=False)
        xs = [r[spec.x] for r in rows]
        for ax, column in zip(axes.flat, spec.y):
            ax.plot(xs, [_number(r[column]) for r in rows], marker=".")
            ax.set_title(column, fontsize="medium")
            _integer_ticks(ax, xs)
            ax.set_xlabel(spec.xlabel)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(spec.y):]:
            ax.set_visible(False)
        fig.suptitle(title)
    else:
        fig, ax = plt.subplots(figsize=(10, 5.5))
        (_bars if spec.kind == "bars" else _lines)(ax, spec, rows)
        ax.set_title(title)
        if spec.x == "window_start":
            fig.autofmt_xdate()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)  # figures are kept alive by pyplot until closed
    return path
