"""The sink's insert path: encoded values as an Avro container file that ClickHouse decodes.

The rows it writes must be the rows the decoded-dict insert writes, column for column,
for every payload; a file that does not read to the end must write nothing.
"""

import io

import fastavro
import pytest

from consumers.store import QueryError, RowShapeError
from consumers.store.container import ContainerFormat, row_schema, zigzag_long
from schemas.codec import CODEC, HEADER_LEN
from tests.store.conftest import advantage, dead_letter, feedback, metric, policy, rollout, task

RECORDS = {
    "tasks": ("Task", [task(1), task(2, bug_pattern="wrong_operator")]),
    "rollouts": ("Rollout", [rollout(1), rollout(2, policy_version=3)]),
    "feedback": ("Feedback", [feedback(1), feedback(2)]),
    "advantages": ("Advantage", [advantage(1), advantage(2, advantage_value=-1.25)]),
    "policy": ("PolicyVersion", [policy(1), policy(2, version=2)]),
    "metrics": ("Metric", [metric(1), metric(2, values={"a": 1.5, "b": -2.0})]),
    "dead_letters": ("DeadLetter", [dead_letter(1), dead_letter(2)]),
}


def _format(payload: str) -> ContainerFormat:
    fp = CODEC.encode(payload, RECORDS_BY_PAYLOAD[payload][0])[2:HEADER_LEN]
    return ContainerFormat.of(CODEC.writer_schema(fp))


RECORDS_BY_PAYLOAD = {payload: records for payload, records in RECORDS.values()}


def _rows(store, table: str) -> list[tuple]:
    return store.query(f"SELECT * EXCEPT (_inserted_at) FROM {table} ORDER BY event_id").rows


@pytest.mark.parametrize("zigzag", [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
                                    (-65, b"\x81\x01"), (2**31, b"\x80\x80\x80\x80\x10")])
def test_zigzag_long_matches_the_avro_specification(zigzag):
    n, encoded = zigzag
    assert zigzag_long(n) == encoded
    assert fastavro.schemaless_reader(io.BytesIO(encoded), "long", None) == n


def test_container_file_reads_back_as_the_records_with_coordinates():
    fmt = _format("Feedback")
    records = RECORDS["feedback"][1]
    bodies = [CODEC.encode("Feedback", r)[HEADER_LEN:] for r in records]
    data = fmt.file("feedback", [(3, 10, bodies[0]), (5, 2**40, memoryview(bodies[1]))])
    read = list(fastavro.reader(io.BytesIO(data)))
    assert [(r["_topic"], r["_partition"], r["_offset"]) for r in read] == [("feedback", 3, 10), ("feedback", 5, 2**40)]
    assert read[0]["event_time"].timestamp() * 1000 == records[0]["created_at_ms"]
    assert {k: v for k, v in read[1].items() if k not in ("event_time", "_topic", "_partition", "_offset")} == {
        k: v for k, v in records[1].items() if k != "created_at_ms"}
    assert fmt.columns[-3:] == ("_topic", "_partition", "_offset") and "event_time" in fmt.columns


def test_row_schema_refuses_a_clash_with_the_kafka_columns():
    writer = {"type": "record", "name": "X", "fields": [{"name": "_offset", "type": "long"}]}
    with pytest.raises(ValueError, match="_offset"):
        row_schema(fastavro.parse_schema(writer))


@pytest.mark.parametrize("table", sorted(RECORDS))
def test_container_insert_writes_the_rows_the_dict_insert_writes(chdb_store, table):
    payload, records = RECORDS[table]
    coords = [("t-" + table, 1, 7), ("t-" + table, 0, 8)]
    chdb_store.insert(table, [{**r, "_topic": t, "_partition": p, "_offset": o} for r, (t, p, o) in zip(records, coords)])
    by_dicts = _rows(chdb_store, table)
    chdb_store.command(f"TRUNCATE TABLE {table}")
    fmt = _format(payload)
    for record, (topic, partition, offset) in zip(records, coords):  # one file per topic, as the sink sends
        body = CODEC.encode(payload, record)[HEADER_LEN:]
        chdb_store.insert_container(table, fmt.columns, fmt.file(topic, [(partition, offset, body)]))
    assert len(by_dicts) == 2
    assert _rows(chdb_store, table) == by_dicts


def test_a_file_that_does_not_read_to_the_end_writes_nothing(chdb_store):
    fmt = _format("Metric")
    good = [CODEC.encode("Metric", r)[HEADER_LEN:] for r in RECORDS["metrics"][1]]
    corrupt = good[0][: len(good[0]) // 2]
    with pytest.raises(QueryError):
        chdb_store.insert_container("metrics", fmt.columns,
                                    fmt.file("metrics", [(0, 0, good[0]), (0, 1, corrupt), (0, 2, good[1])]))
    assert chdb_store.query("SELECT count() FROM metrics").rows[0][0] == 0


def test_container_insert_checks_table_and_columns(chdb_store):
    fmt = _format("Metric")
    with pytest.raises(RowShapeError, match="event_id"):
        chdb_store.insert_container("metrics", [c for c in fmt.columns if c != "event_id"], b"")
    with pytest.raises(ValueError, match="no table"):
        chdb_store.insert_container("nope", fmt.columns, b"")
