"""The event store: one interface over ClickHouse, embedded (chDB) or a server.

Both backends are driven through clickhouse-connect's ``Client``: from version 1.x it
ships a chDB-backed client (``chdb://<path>``) beside the HTTP one, with the same
query/insert/command surface and the same server-side ``{name:Type}`` parameters. So
the DDL, the SQL text, the parameter formatting and the row encoding (Native format)
are literally the same code on both; only the way the client is opened differs.

Why this and not chDB's own Session: on 100k full Feedback records (tokens, test
outcomes), clickhouse-connect's Native insert and its Arrow insert ran at about the same
rate (13k-39k rows/s on a busy 2-core machine, ``benchmarks/store_insert.py``),
both about twice chDB's ``send_insert`` with JSONEachRow; inline ``INSERT ... FORMAT
JSONEachRow`` and the ``Python()`` table function were slower still. Native needs no
schema round trip, carries bytes, maps and named tuples without a text encoding, and
chDB's Session formats Array(String) parameters incorrectly, so Native it is.

chDB runs one engine per process, bound to one data path: clients on the same path
share it, and opening a different path while a store is open fails. ``ChdbStore``
raises ``ChdbPathInUseError`` for that; close the first store (or reuse it) instead.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, Sequence

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from consumers.store.rows import StoreError, RowShapeError, check_table, to_columns, to_row

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CHDB_PATH = REPO_ROOT / "data" / "chdb"
SERVER_SCHEMES = ("clickhouse://", "clickhouses://", "http://", "https://")


class QueryError(StoreError):
    """ClickHouse refused a statement (syntax, unknown column, bad parameter, ...)."""


class ChdbPathInUseError(StoreError):
    """This process already runs the chDB engine on another data path."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple] = field(default_factory=list)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class Store(Protocol):
    def init_schema(self) -> None: ...
    def insert(self, table: str, rows: list[dict[str, Any]]) -> int: ...
    def insert_container(self, table: str, columns: Sequence[str], data: bytes) -> None: ...
    def query(self, sql: str, params: dict[str, Any] | None = None) -> QueryResult: ...
    def command(self, sql: str, params: dict[str, Any] | None = None) -> None: ...
    def close(self) -> None: ...


def ddl_statements() -> list[str]:
    """The CREATE TABLE statements of ddl.sql, one string each."""
    text = resources.files("consumers.store").joinpath("ddl.sql").read_text()
    # Drop comment lines first so a ';' inside a comment cannot split a statement.
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [stmt.strip() for stmt in code.split(";") if stmt.strip()]


class ClientStore:
    """The Store over any clickhouse-connect Client; the backends only open the client."""

    def __init__(self, client: Client):
        self._client = client
        self._required: dict[str, set[str]] = {}  # table -> columns without a default

    def init_schema(self) -> None:
        for statement in ddl_statements():
            self.command(statement)

    def insert(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Write Avro-shaped records to ``table``; returns the number of rows written."""
        check_table(table)
        if not rows:
            return 0
        columns, values = to_columns([to_row(r) for r in rows])
        missing = sorted(self._required_columns(table) - set(columns))
        if missing:
            raise RowShapeError(f"rows for {table} lack columns without a default: {missing}")
        try:
            summary = self._client.insert(table, values, column_names=columns)
        except ClickHouseError as exc:
            raise QueryError(f"insert into {table} failed: {exc}") from exc
        return summary.written_rows

    def insert_container(self, table: str, columns: Sequence[str], data: bytes) -> None:
        """Write an Avro container file (``consumers/store/container.py``) to ``table``: ClickHouse
        decodes it. One INSERT of fewer rows than ``max_insert_block_size`` is one block, so a
        file that does not parse to the end writes nothing."""
        check_table(table)
        missing = sorted(self._required_columns(table) - set(columns))
        if missing:
            raise RowShapeError(f"records for {table} lack columns without a default: {missing}")
        try:
            self._client.raw_insert(table, list(columns), data, fmt="Avro")
        except ClickHouseError as exc:
            raise QueryError(f"Avro insert into {table} failed: {exc}") from exc

    def query(self, sql: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Run a SELECT; ``{name:Type}`` placeholders are bound server-side from ``params``.

        Values come back as Python types (str, int, float, bool, UTC datetime, list, dict,
        tuple-as-dict for named tuples). A String value that is not UTF-8 comes back as
        its hex text (clickhouse-connect's rule); select ``hex(col)`` to make that explicit.
        """
        try:
            result = self._client.query(sql, parameters=params)
        except ClickHouseError as exc:
            raise QueryError(str(exc)) from exc
        return QueryResult(list(result.column_names), [tuple(r) for r in result.result_rows])

    def command(self, sql: str, params: dict[str, Any] | None = None) -> None:
        """Run a statement that returns no rows (DDL, OPTIMIZE, TRUNCATE)."""
        try:
            self._client.command(sql, parameters=params)
        except ClickHouseError as exc:
            raise QueryError(str(exc)) from exc

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "ClientStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _required_columns(self, table: str) -> set[str]:
        if table in self._required:
            return self._required[table]
        result = self.query(
            "SELECT name FROM system.columns"
            " WHERE database = currentDatabase() AND table = {table:String} AND default_kind = ''",
            {"table": table},
        )
        self._required[table] = {name for (name,) in result.rows}
        return self._required[table]


# The chDB engine path this process holds, with how many ChdbStores hold it.
_chdb_lock = threading.Lock()
_chdb_holders: Counter[str] = Counter()


class ChdbStore(ClientStore):
    """The embedded store: the ClickHouse engine in this process, data under ``path``."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_CHDB_PATH):
        # chDB compares engine paths literally, so resolve spellings of one directory.
        self.path = os.path.realpath(path)
        with _chdb_lock:
            held = [p for p, n in _chdb_holders.items() if n > 0 and p != self.path]
            if held:
                raise ChdbPathInUseError(
                    f"chDB already runs on {held[0]} in this process; close that store before opening {self.path}"
                )
            Path(self.path).mkdir(parents=True, exist_ok=True)
            # tz_mode="schema": DateTime64(3, 'UTC') columns come back as UTC-aware datetimes.
            try:
                client = clickhouse_connect.get_client(dsn=f"chdb://{self.path}", tz_mode="schema")
            except ClickHouseError as exc:
                # another library in this process may have started chDB on its own
                if "already initialized" in str(exc):
                    raise ChdbPathInUseError(str(exc)) from exc
                raise StoreError(f"cannot open chDB at {self.path}: {exc}") from exc
            _chdb_holders[self.path] += 1
        super().__init__(client)
        self._closed = False

    def close(self) -> None:
        with _chdb_lock:
            if self._closed:
                return
            super().close()
            self._closed = True
            _chdb_holders[self.path] -= 1


class ClickHouseServerStore(ClientStore):
    """A ClickHouse server over HTTP(S): ``clickhouse://user:pass@host:8123/db`` or ``http(s)://...``."""

    def __init__(self, url: str):
        self.url = url
        try:
            client = clickhouse_connect.get_client(dsn=_http_dsn(url), tz_mode="schema")
        except ClickHouseError as exc:
            raise StoreError(f"cannot reach ClickHouse at {_redact(url)}: {exc}") from exc
        super().__init__(client)


def _http_dsn(url: str) -> str:
    # clickhouse-connect speaks HTTP; clickhouse(s):// is accepted as a spelling of http(s)://.
    return re.sub(r"^clickhouse(s?)://", r"http\1://", url)


def _redact(url: str) -> str:
    return re.sub(r"//[^@/]*@", "//***@", url)


def is_server_url(url_or_path: str) -> bool:
    return url_or_path.startswith(SERVER_SCHEMES)


def open_store(url_or_path: str | os.PathLike[str] | None = None) -> ClientStore:
    """A server store for ``clickhouse://``/``http(s)://`` URLs, else chDB at that path.

    ``None`` means ``$RESHAPER_STORE_URL`` if set, else ``<repo>/data/chdb``.
    """
    target = str(url_or_path or os.environ.get("RESHAPER_STORE_URL") or DEFAULT_CHDB_PATH)
    if is_server_url(target):
        return ClickHouseServerStore(target)
    return ChdbStore(target.removeprefix("chdb://"))
