"""``reshaper store``: create the tables, run SQL against the event store."""

from __future__ import annotations

import csv
import json
import sys
from enum import Enum
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from consumers.store.rows import StoreError
from consumers.store.store import QueryResult, open_store

store_app = typer.Typer(help="The ClickHouse event store (chDB path or server URL).", no_args_is_help=True)

UrlOption = Annotated[
    Optional[str],
    typer.Option(
        "--url",
        help="clickhouse:// or http(s):// URL of a server, or a chDB data path"
        " (default: $RESHAPER_STORE_URL, else <repo>/data/chdb).",
    ),
]


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@store_app.command()
def init(url: UrlOption = None) -> None:
    """Create every table (safe to run again)."""
    try:
        with open_store(url) as store:
            store.init_schema()
    except StoreError as exc:
        raise typer.BadParameter(str(exc)) from exc
    typer.echo("schema ready")


@store_app.command()
def query(
    sql: Annotated[str, typer.Argument(help='SQL to run, e.g. "SELECT count() FROM feedback FINAL"')],
    url: UrlOption = None,
    output: Annotated[OutputFormat, typer.Option("--format", help="How to print the rows.")] = OutputFormat.table,
) -> None:
    """Run one SELECT and print its rows."""
    try:
        with open_store(url) as store:
            result = store.query(sql)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    print_result(result, output)


def print_result(result: QueryResult, output: OutputFormat) -> None:
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows)
    elif output is OutputFormat.json:
        # one object per line; datetimes and bytes print as text
        for row in result.as_dicts():
            typer.echo(json.dumps(row, default=str))
    else:
        table = Table(*result.columns)
        for row in result.rows:
            table.add_row(*(str(v) for v in row))
        Console().print(table)
