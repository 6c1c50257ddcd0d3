"""Command line of the stream processors: ``reshaper worker`` and ``reshaper replay``.

``worker_app`` holds both commands; it runs on its own too (``python -m streams.cli``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from infra.platform.settings import bootstrap_servers, home_dir

worker_app = typer.Typer(help="Faust stream processors: feedback and reshape agents, replays.")


def _settings(path: Optional[Path]):
    from streams.settings import StreamSettings

    return StreamSettings.model_validate_json(path.read_text()) if path else StreamSettings()


@worker_app.command()
def worker(
    config: Path = typer.Option(..., help="reshaping config YAML (its id names the advantage topic)"),
    app_id: str = typer.Option("reshaper", help="Faust app id: consumer group and table namespace"),
    settings: Optional[Path] = typer.Option(None, help="StreamSettings as JSON (default: built-in defaults)"),
    data_dir: Optional[Path] = typer.Option(None, help="table store directory (default: $RESHAPER_HOME/faust/<app id>)"),
    bootstrap: Optional[str] = typer.Option(None, help="Kafka bootstrap servers (default: RESHAPER_BOOTSTRAP)"),
    loglevel: str = typer.Option("warning", help="log level of the worker"),
) -> None:
    """Run the feedback and reshape agents until stopped (SIGTERM/SIGINT)."""
    import faust
    from confluent_kafka.admin import AdminClient

    from streams.app import create_app, ensure_app_topics
    from streams.reshaping.config import load_config

    cfg = load_config(config)
    stream_settings = _settings(settings)
    bootstrap = bootstrap or bootstrap_servers()
    ensure_app_topics(AdminClient({"bootstrap.servers": bootstrap}), app_id, cfg, stream_settings)
    app = create_app(app_id, cfg, bootstrap, data_dir or home_dir() / "faust" / app_id, stream_settings)
    faust.Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()


@worker_app.command()
def replay(
    config: Path = typer.Option(..., help="the reshaping config to replay the feedback log under"),
    start: str = typer.Option("earliest", "--from", help="'earliest' or a timestamp in ms since the epoch"),
    follow: bool = typer.Option(False, help="keep running after catching up"),
    processes: Optional[int] = typer.Option(None, help="parallel replay processes (default: one per partition and CPU)"),
    settings: Optional[Path] = typer.Option(None, help="StreamSettings as JSON (topics, timeouts)"),
    bootstrap: Optional[str] = typer.Option(None, help="Kafka bootstrap servers (default: RESHAPER_BOOTSTRAP)"),
) -> None:
    """Re-reshape the feedback log into ``advantages.<config id>``, beside the existing streams."""
    from streams.replay import ReplayOptions, run_replay
    from streams.reshaping.config import load_config

    cfg = load_config(config)
    start_ms = None if start == "earliest" else int(start)
    report = run_replay(cfg, ReplayOptions(bootstrap=bootstrap or bootstrap_servers(), settings=_settings(settings),
                                           start_ms=start_ms, follow=follow, progress=True,
                                           processes=processes))
    typer.echo(f"replayed {report.feedback} feedback events into {report.topic}: "
               f"{report.advantages} advantages in {report.seconds:.1f}s ({report.rate:.0f} events/s)")


if __name__ == "__main__":
    worker_app()
