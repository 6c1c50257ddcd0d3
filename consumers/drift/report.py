"""Run one drift query: rows from the store, a printed table, a PNG, and rule flags."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from consumers.drift.charts import draw
from consumers.drift.queries import FAR_PAST, bind_parameters, load_query, parse_since
from consumers.drift.rules import DriftFlag, HackingRule, pattern_regression_flags, reward_hacking_flags
from consumers.store import Store

DEFAULT_OUT_DIR = Path("runs") / "drift"  # runs/ is git-ignored


@dataclass(frozen=True)
class DriftReport:
    name: str
    columns: list[str]
    rows: list[tuple]
    png_path: Path | None  # None when there were no rows to draw
    flags: list[DriftFlag] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]

    @property
    def empty(self) -> bool:
        return not self.rows


def _utc(value: Any) -> Any:
    # Every store column is UTC, but a DateTime('UTC') result can arrive without tzinfo.
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _describe(parameters: dict[str, Any]) -> str:
    far_past = FAR_PAST.strftime("%Y-%m-%d")
    shown = {k: v for k, v in parameters.items() if not (k == "since" and v.startswith(far_past))}
    if shown.get("config_id") == "":
        shown["config_id"] = "every config"
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "all events"


def print_report(report: DriftReport, console: Console) -> None:
    described = _describe(report.parameters)
    if report.empty:
        console.print(f"[yellow]{report.name}: no rows ({described}); nothing to chart.[/yellow]")
        return
    table = Table(*report.columns, title=f"{report.name} ({described})")
    for row in report.rows:
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    for flag in report.flags:
        # escape: "[pattern]" in a flag would otherwise be read as rich markup
        console.print(f"[bold red]FLAG[/bold red] {escape(str(flag))}", soft_wrap=True)
    console.print(f"chart: {report.png_path}", soft_wrap=True)


def _flags(name: str, rows: list[dict[str, Any]], config: str | None, rule: HackingRule | None) -> list[DriftFlag]:
    if name == "proxy_vs_heldout":
        return reward_hacking_flags(rows, config or "", rule)
    if name == "pattern_success":
        return pattern_regression_flags(rows)
    return []


def run_drift(
    store: Store,
    name: str,
    since: datetime | str | None = None,
    config: str | None = None,
    config_b: str | None = None,
    window_s: int = 60,
    *,
    out_dir: Path = DEFAULT_OUT_DIR,
    rule: HackingRule | None = None,
    console: Console | None = None,
) -> DriftReport:
    """Run drift query ``name``, print it, chart it to ``out_dir/<name>.png``, apply its rules.

    An empty result is a report with no rows and no PNG (and a note on the console), not
    an error. Raises DriftError for an unknown name or a missing/bad parameter, and the
    store's QueryError when the backend refuses the SQL.
    """
    query = load_query(name)
    moment = parse_since(since) if since is None or isinstance(since, str) else since
    parameters = bind_parameters(query, moment, config, config_b, window_s)
    result = store.query(query.sql, parameters)
    rows = [tuple(_utc(v) for v in row) for row in result.rows]
    dicts = [dict(zip(result.columns, row)) for row in rows]
    png_path = None
    if rows:
        png_path = draw(name, dicts, Path(out_dir) / f"{name}.png", subtitle=_describe(parameters))
    report = DriftReport(name, list(result.columns), rows, png_path, _flags(name, dicts, config, rule), parameters)
    print_report(report, console or Console())
    return report
