"""`reshaper sink`: stream every topic into ClickHouse."""

from __future__ import annotations

import signal
from typing import Optional

import typer

from consumers.sink import Sink, SinkConfig
from consumers.store import ChdbStore
from infra.platform.topics import Topics


def sink(store: Optional[str] = typer.Option(None, help="chDB path or ClickHouse server URL (default: embedded chDB)"),
         group_id: str = typer.Option("reshaper-sink", help="consumer group"),
         batch_rows: int = typer.Option(5000, help="rows per batch"),
         batch_seconds: float = typer.Option(2.0, help="longest a row waits in the buffer"),
         topic_prefix: str = typer.Option("", help="the topic namespace to store (Topics.prefix)"),
         idle_exit: Optional[float] = typer.Option(None, help="exit after this many idle seconds (default: run until Ctrl-C)"),
         serve_queries: bool = typer.Option(False, help="answer the dashboard's queries of the chDB folder this "
                                            "process holds (no other process can open it meanwhile)")) -> None:
    """Store every event (tasks, rollouts, feedback, advantages.*, policy, metrics, dead letters, reviews)."""
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    s = Sink(SinkConfig(store=store, group_id=group_id, batch_rows=batch_rows, batch_seconds=batch_seconds,
                        topics=Topics(prefix=topic_prefix)))
    service = None
    if serve_queries and isinstance(s.store, ChdbStore):
        from consumers.dashboard.query_service import QueryService

        service = QueryService(s.store.path).start()
    try:
        stats = s.run(lambda: stopping["now"], idle_exit_s=idle_exit)
    except KeyboardInterrupt:
        s.flush()
        stats = s.stats
    finally:
        if service is not None:
            service.stop()
        s.close()
    typer.echo(f"stored {stats.total()} rows in {stats.batches} batches: {dict(stats.rows)}; "
               f"dead-lettered {stats.dead_lettered}")
