"""``reshaper drift NAME``: run one drift query against the event store.

``drift`` is a plain function with typer annotations, so it can be mounted as a command
(``app.command("drift")(drift)``); ``drift list`` (NAME = list) prints the queries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from consumers.drift.queries import DriftError, load_query, query_names
from consumers.drift.report import DEFAULT_OUT_DIR, run_drift
from consumers.store import StoreError, open_store


def drift_names() -> list[str]:
    """The drift queries that can be run, by name."""
    return list(query_names())


def print_names(console: Console) -> None:
    table = Table("query", "answers", title="drift queries")
    for name in drift_names():
        table.add_row(name, load_query(name).summary)
    console.print(table)


def drift(
    name: Annotated[str, typer.Argument(help="query to run, or 'list' to see them all")],
    since: Annotated[
        Optional[str], typer.Option(help="only events at or after this: ISO time (UTC if no offset) or age like 6h, 7d")
    ] = None,
    config: Annotated[Optional[str], typer.Option(help="reshaping config_id (config_a for config_compare)")] = None,
    config_b: Annotated[Optional[str], typer.Option(help="second config_id, for config_compare")] = None,
    window_s: Annotated[int, typer.Option(help="seconds per time window", min=1)] = 60,
    store: Annotated[
        Optional[str], typer.Option(help="chDB path or ClickHouse server URL (default: $RESHAPER_STORE_URL or chDB)")
    ] = None,
    out: Annotated[Path, typer.Option(help="folder the chart PNG is written to")] = DEFAULT_OUT_DIR,
) -> None:
    """Drift analysis: reward, pass rate, hack flags, configs and learner health over versions and time."""
    console = Console()
    if name == "list":
        print_names(console)
        return
    try:
        with open_store(store) as opened:
            run_drift(opened, name, since, config, config_b, window_s, out_dir=out, console=console)
    except (DriftError, StoreError) as exc:
        hint = " (no tables yet? create them with `reshaper store init`)" if "UNKNOWN_TABLE" in str(exc) else ""
        typer.echo(f"error: {exc}{hint}", err=True)
        raise typer.Exit(2) from exc
