"""``reshaper dashboard``: the web page over a run's history (``--run runs/NAME`` or ``--store``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from consumers.store import StoreError


def dashboard(
    run: Annotated[Optional[Path], typer.Option(help="run folder: its store, broker and topics from its run.yaml",
                                                exists=True, file_okay=False)] = None,
    store: Annotated[Optional[str], typer.Option(help="chDB folder or ClickHouse server URL (instead of --run)")] = None,
    host: Annotated[str, typer.Option(help="address to serve on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to serve on")] = 8050,
    refresh_s: Annotated[float, typer.Option(help="seconds between chart refreshes")] = 10.0,
    bootstrap: Annotated[Optional[str], typer.Option(help="Kafka for verdicts (default: the run's; with "
                                                          "--store: $RESHAPER_BOOTSTRAP, else reviewing is off)")] = None,
    topic_prefix: Annotated[Optional[str], typer.Option(help="topic namespace of the reviews topic (with --store)")] = None,
) -> None:
    """Watch and review a run in a browser: live charts, samples with their reward, verdicts."""
    import os

    from consumers.dashboard.app import create_app
    from consumers.dashboard.config import DashboardConfig, config_for_run
    from consumers.dashboard.reviews import ReviewPublisher
    from consumers.dashboard.source import open_source
    from infra.platform.topics import Topics

    if (run is None) == (store is None):
        typer.echo("error: give exactly one of --run and --store", err=True)
        raise typer.Exit(2)
    overrides = {"host": host, "port": port, "refresh_s": refresh_s}
    if run is not None:
        cfg = config_for_run(run, bootstrap=bootstrap, **overrides)
    else:
        cfg = DashboardConfig(store=store, bootstrap=bootstrap or os.environ.get("RESHAPER_BOOTSTRAP"),
                              topics=Topics(prefix=topic_prefix or ""), **overrides)
    try:
        source = open_source(cfg.store, cfg.query_timeout_s)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    publisher = None
    if cfg.bootstrap:
        try:
            publisher = ReviewPublisher(cfg.bootstrap, cfg.topics, source)
        except Exception as exc:  # a broker that is down turns reviewing off, not the page
            typer.echo(f"reviewing off: no Kafka at {cfg.bootstrap} ({exc})", err=True)
    typer.echo(f"dashboard of {cfg.store} on http://{cfg.host}:{cfg.port}/"
               f"{'' if publisher else ' (reviewing off)'}")
    try:
        create_app(cfg, source, publisher).run(host=cfg.host, port=cfg.port, threaded=True)
    finally:
        source.close()
