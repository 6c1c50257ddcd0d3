"""consumers/store/ddl.sql against schemas/*.avsc: every Avro field has its column, of the
type the conventions at the top of ddl.sql give it, and every column but the ones the
store adds on load has its field."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from consumers.store.container import EVENT_TIME_FIELD
from consumers.store.rows import KAFKA_COLUMNS, TABLE_FOR_PAYLOAD, TABLES
from consumers.store.store import ddl_statements
from schemas.codec import CODEC

LOAD_COLUMNS = frozenset((*KAFKA_COLUMNS, "_inserted_at"))  # the store's, not the event's
EVENT_TIME_TYPE = "DateTime64(3, 'UTC')"
PRIMITIVES = {"string": "String", "bytes": "String", "int": "Int32", "long": "Int64", "float": "Float32",
              "double": "Float64", "boolean": "Bool"}


def normalise(column_type: str) -> str:
    """One spelling per type: single spaces, none inside parentheses. LowCardinality(String)
    counts as String: it is how a column stores its strings, not what they are."""
    spelled = re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", column_type).strip())
    spelled = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", spelled))
    return spelled.replace("LowCardinality(String)", "String")


def table_columns(statement: str) -> tuple[str, dict[str, str]]:
    """The table of one CREATE TABLE statement and its columns (name -> normalised type)."""
    head = re.match(r"CREATE TABLE IF NOT EXISTS\s+(\w+)\s*\(", statement)
    assert head, f"not a CREATE TABLE statement: {statement[:60]!r}"
    definitions, depth, start = [], 0, head.end()
    for i in range(head.end(), len(statement)):  # split at the commas outside Tuple(...), DateTime64(...)
        char = statement[i]
        if char in ",)" and depth == 0:  # the end of a column definition; ")" also ends the list
            definitions.append(statement[start:i])
            start = i + 1
            if char == ")":
                break
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
    columns = {}
    for definition in definitions:
        name, column_type = definition.strip().split(None, 1)
        columns[name.strip("`")] = normalise(re.split(r"\s+DEFAULT\s+", column_type)[0])
    return head.group(1), columns


def column_type(avro_type: Any) -> str:
    """The ClickHouse type the DDL conventions give an Avro type."""
    if isinstance(avro_type, str):
        return PRIMITIVES[avro_type]
    if isinstance(avro_type, list):  # only an optional value, ["null", T], has a column type
        (value_type,) = [t for t in avro_type if t != "null"]
        return f"Nullable({column_type(value_type)})"
    kind = avro_type["type"]
    if kind == "array":
        return f"Array({column_type(avro_type['items'])})"
    if kind == "map":
        return f"Map(String, {column_type(avro_type['values'])})"
    if kind == "record":  # an Array of named Tuples in the DDL, field by field
        return "Tuple(" + ", ".join(f"{f['name']} {column_type(f['type'])}" for f in avro_type["fields"]) + ")"
    return column_type(kind)  # {"type": "long", ...}


def schema_vs_table(schema: dict, table: str, columns: dict[str, str]) -> list[str]:
    """Every difference between a payload's schema and its table's columns, one line each."""
    payload = schema["name"].split(".")[-1]
    problems = []
    for field in schema["fields"]:
        is_event_time = field["name"] == EVENT_TIME_FIELD[0]
        column = EVENT_TIME_FIELD[1] if is_event_time else field["name"]
        wanted = EVENT_TIME_TYPE if is_event_time else column_type(field["type"])
        if column not in columns:
            problems.append(f"{table}.{column}: no column for {payload}.{field['name']} (wanted {wanted})")
        elif columns[column] != wanted:
            problems.append(f"{table}.{column}: column type {columns[column]}, but {payload}.{field['name']} "
                            f"is {field['type']}, which is {wanted}")
    fields = {EVENT_TIME_FIELD[1] if f["name"] == EVENT_TIME_FIELD[0] else f["name"] for f in schema["fields"]}
    problems += [f"{table}.{column}: column with no field in {payload}"
                 for column in sorted(columns.keys() - fields - LOAD_COLUMNS)]
    return problems


DDL = dict(table_columns(statement) for statement in ddl_statements())


def test_every_table_of_the_ddl_is_a_payloads():
    assert sorted(DDL) == sorted(TABLES)


@pytest.mark.parametrize("payload", sorted(TABLE_FOR_PAYLOAD))
def test_table_columns_match_the_schema(payload):
    table = TABLE_FOR_PAYLOAD[payload]
    problems = schema_vs_table(CODEC.schema(payload), table, DDL[table])
    assert not problems, "\n".join(problems)


def test_the_parser_reads_nested_types_and_drops_defaults():
    feedback = DDL["feedback"]
    assert feedback["test_outcomes"] == ("Array(Tuple(index Int32, passed Bool, error_kind String, message String, "
                                         "runtime_ms Float32))")
    assert (feedback["event_time"], feedback["_offset"]) == (EVENT_TIME_TYPE, "Int64")
    assert DDL["metrics"]["values"] == "Map(String, Float64)"  # a backquoted name


def _feedback_schema_with(change) -> dict:
    schema = copy.deepcopy(CODEC.schema("Feedback"))
    change(schema["fields"])
    return schema


def test_a_field_the_ddl_lacks_is_reported_by_table_and_column():
    schema = _feedback_schema_with(lambda fields: fields.append({"name": "novelty", "type": "double"}))
    assert schema_vs_table(schema, "feedback", DDL["feedback"]) == [
        "feedback.novelty: no column for Feedback.novelty (wanted Float64)"]


def test_a_type_that_differs_is_reported_by_table_and_column():
    def widen_difficulty(fields):
        next(f for f in fields if f["name"] == "difficulty")["type"] = "double"

    schema = _feedback_schema_with(widen_difficulty)
    assert schema_vs_table(schema, "feedback", DDL["feedback"]) == [
        "feedback.difficulty: column type Float32, but Feedback.difficulty is double, which is Float64"]


def test_a_column_the_schema_lacks_and_a_column_dropped_from_the_ddl_are_reported():
    schema = _feedback_schema_with(lambda fields: fields.remove(next(f for f in fields if f["name"] == "repeats")))
    assert schema_vs_table(schema, "feedback", DDL["feedback"]) == ["feedback.repeats: column with no field in Feedback"]
    statement = next(s for s in ddl_statements() if table_columns(s)[0] == "feedback")
    table, columns = table_columns(re.sub(r"\n\s*tree_edit_distance_raw\s+Int32,", "", statement))
    assert schema_vs_table(CODEC.schema("Feedback"), table, columns) == [
        "feedback.tree_edit_distance_raw: no column for Feedback.tree_edit_distance_raw (wanted Int32)"]
