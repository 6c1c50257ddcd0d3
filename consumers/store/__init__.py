"""ClickHouse event store: chDB embedded or a ClickHouse server, same DDL and SQL."""

from consumers.store.rows import (
    TABLES,
    RowShapeError,
    StoreError,
    UnknownTableError,
    table_for_topic,
    to_row,
)
from consumers.store.store import (
    DEFAULT_CHDB_PATH,
    ChdbPathInUseError,
    ChdbStore,
    ClickHouseServerStore,
    QueryError,
    QueryResult,
    Store,
    open_store,
)

__all__ = [
    "TABLES",
    "DEFAULT_CHDB_PATH",
    "ChdbPathInUseError",
    "ChdbStore",
    "ClickHouseServerStore",
    "QueryError",
    "QueryResult",
    "RowShapeError",
    "Store",
    "StoreError",
    "UnknownTableError",
    "open_store",
    "table_for_topic",
    "to_row",
]
