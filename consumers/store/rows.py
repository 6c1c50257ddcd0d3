"""Pure mapping from Avro records (as decoded by schemas.codec) to store rows.

No I/O here: the store calls ``to_row`` on every dict it inserts, and a consumer can
call ``table_for_topic`` to route a Kafka message to its table.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from infra.platform.topics import Topics

# Avro payload name -> table (schemas.codec.SCHEMA_FILES names the payloads).
TABLE_FOR_PAYLOAD = {
    "Task": "tasks",
    "Rollout": "rollouts",
    "Feedback": "feedback",
    "Advantage": "advantages",
    "PolicyVersion": "policy",
    "Metric": "metrics",
    "DeadLetter": "dead_letters",
    "Review": "reviews",
}
TABLES = tuple(TABLE_FOR_PAYLOAD.values())

KAFKA_COLUMNS = ("_topic", "_partition", "_offset")


class StoreError(Exception):
    """Base of every error the store raises."""


class UnknownTableError(StoreError, ValueError):
    def __init__(self, name: str):
        super().__init__(f"no table for {name!r}; known tables: {', '.join(TABLES)}")
        self.name = name


class RowShapeError(StoreError, ValueError):
    """Rows of one insert that do not share one set of columns."""


def table_for_topic(topic: str, topics: Topics = Topics()) -> str:
    """The table a topic's events land in: the table of its payload
    (``advantages.<config_id>`` -> ``advantages``)."""
    try:
        return TABLE_FOR_PAYLOAD[topics.payload(topic)]
    except ValueError:
        raise UnknownTableError(topic) from None


def check_table(table: str) -> str:
    if table not in TABLES:
        raise UnknownTableError(table)
    return table


def event_time(created_at_ms: int) -> datetime:
    return datetime.fromtimestamp(created_at_ms / 1000, tz=timezone.utc)


def to_row(record: dict[str, Any]) -> dict[str, Any]:
    """One Avro record (optionally with _topic/_partition/_offset) as a row of its table.

    ``created_at_ms`` becomes ``event_time``. Everything else passes through: nested
    ``test_outcomes`` records go as dicts into the named-tuple array, maps as dicts,
    Avro bytes as bytes into String columns.
    """
    row = dict(record)
    if "created_at_ms" in row:
        row["event_time"] = event_time(row.pop("created_at_ms"))
    return row


def to_columns(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Column names and row-major values for a batch; every row must have the same keys.

    Mixed key sets are refused rather than filled, because a silent default would hide
    a record written under the wrong schema.
    """
    columns = list(rows[0])
    expected = set(columns)
    for i, row in enumerate(rows):
        if set(row) != expected:
            missing = sorted(expected - set(row))
            extra = sorted(set(row) - expected)
            raise RowShapeError(f"row {i} differs from row 0: missing {missing}, extra {extra}")
    return columns, [[row[c] for c in columns] for row in rows]
