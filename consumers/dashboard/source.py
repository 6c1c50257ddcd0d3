"""Where the dashboard's named queries run: in this process, or in the process that holds
the store.

chDB runs the ClickHouse engine inside one process, and that process locks its folder
(``<folder>/status``). Tried with two processes on one folder, one inserting every half
second: the second process cannot open it while the first has it open, neither as a
store nor with chDB's read-only mode (``?mode=ro``): "Cannot lock file .../status.
Another server instance in same directory is already running", surfaced as
"Error initializing EmbeddedServer". Within one process, though, a second client on the
same folder reads while the first inserts, from another thread. So while a run's sink
writes its chDB folder, the sink process also answers the dashboard's queries
(``reshaper sink --serve-queries``: ``query_service``), and the dashboard asks it over
loopback HTTP. A finished run's folder, or a ClickHouse server, the dashboard opens itself.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from consumers.dashboard.queries import jsonable_rows, sql_for
from consumers.store import StoreError, open_store
from consumers.store.store import ClientStore, is_server_url


class SourceError(StoreError):
    """The queries cannot be run: the store is held elsewhere, or its query service is down."""


class QuerySource(Protocol):
    holds_store: bool  # True: this process can also write the store

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


def query_url_file(store: str) -> Path:
    """Where the process holding a chDB folder writes the address of its query service."""
    return Path(str(store).removeprefix("chdb://").rstrip("/") + ".queries")


class StoreSource:
    """Queries on a store this process opened (a free chDB folder or a server)."""

    holds_store = True

    def __init__(self, store: ClientStore):
        self.store = store
        # one client, shared by the page's request threads: one statement at a time
        self._lock = threading.Lock()

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        sql = sql_for(name)
        with self._lock:
            return jsonable_rows(self.store.query(sql, params).as_dicts())

    def insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            self.store.insert(table, rows)

    def close(self) -> None:
        self.store.close()


class RemoteSource:
    """Queries answered by the query service of the process that holds the store."""

    holds_store = False

    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        body = json.dumps({"query": name, "params": params}).encode()
        request = urllib.request.Request(f"{self.url}/query", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())["rows"]
        except urllib.error.HTTPError as exc:
            raise SourceError(f"query service at {self.url}: {exc.read().decode(errors='replace')[:500]}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise SourceError(f"query service at {self.url} unreachable: {exc}") from exc

    def close(self) -> None:
        pass


def _held_elsewhere(exc: StoreError) -> bool:
    text = str(exc)
    return "Cannot lock file" in text or "Error initializing EmbeddedServer" in text


def open_source(store: str, timeout_s: float = 30.0) -> QuerySource:
    """The store opened here when it can be; else the query service of the process that holds it."""
    try:
        opened = open_store(store)
    except StoreError as exc:
        if is_server_url(store) or not _held_elsewhere(exc):
            raise
        address = query_url_file(store)
        if not address.exists():
            raise SourceError(
                f"another process holds the chDB folder {store} (the run's sink?) and serves no queries: "
                "start that sink with --serve-queries, or store to a ClickHouse server") from exc
        return RemoteSource(address.read_text().strip(), timeout_s)
    # A store written before a table existed (reviews) gains it: the DDL creates only what is
    # missing, and the review panels and verdicts need the table.
    opened.init_schema()
    return StoreSource(opened)
