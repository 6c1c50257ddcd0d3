from datetime import datetime, timezone

import pytest

from consumers.store import (
    TABLES,
    ChdbPathInUseError,
    ChdbStore,
    ClickHouseServerStore,
    QueryError,
    RowShapeError,
    StoreError,
    UnknownTableError,
    open_store,
)
from consumers.store.store import ddl_statements, is_server_url
from tests.store.conftest import (
    T0,
    advantage,
    dead_letter,
    feedback,
    metric,
    policy,
    rollout,
    task,
)

# --- both backends --------------------------------------------------------------------


def test_ddl_creates_every_table_and_is_idempotent(store):
    store.init_schema()  # second run: CREATE ... IF NOT EXISTS must not fail
    result = store.query("SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
    assert [name for (name,) in result.rows] == sorted(TABLES)
    assert len(ddl_statements()) == len(TABLES)


# table, records, GROUP BY column, expected counts per group
CASES = [
    (
        "tasks",
        [task(0, "off_by_one"), task(1, "off_by_one"), task(2, "wrong_op")],
        "bug_pattern",
        [("off_by_one", 2), ("wrong_op", 1)],
    ),
    ("rollouts", [rollout(0, 1), rollout(1, 2), rollout(2, 2), rollout(3, 2)], "policy_version", [(1, 1), (2, 3)]),
    (
        "feedback",
        [feedback(0, "a"), feedback(1, "b"), feedback(2, "b"), feedback(3, "c")],
        "bug_pattern",
        [("a", 1), ("b", 2), ("c", 1)],
    ),
    (
        "advantages",
        [advantage(0, "base"), advantage(1, "v2"), advantage(2, "v2")],
        "config_id",
        [("base", 1), ("v2", 2)],
    ),
    ("policy", [policy(0, 1), policy(1, 2)], "version", [(1, 1), (2, 1)]),
    (
        "metrics",
        [metric(0, "learner"), metric(1, "reshape"), metric(2, "reshape")],
        "source",
        [("learner", 1), ("reshape", 2)],
    ),
    (
        "dead_letters",
        [dead_letter(0, "feedback"), dead_letter(1, "rollouts"), dead_letter(2, "rollouts")],
        "source_topic",
        [("feedback", 1), ("rollouts", 2)],
    ),
]


@pytest.mark.parametrize(("table", "records", "column", "expected"), CASES, ids=[c[0] for c in CASES])
def test_insert_then_group_by_counts(store, table, records, column, expected):
    assert store.insert(table, records) == len(records)
    result = store.query(f"SELECT {column}, count() AS n FROM {table} FINAL GROUP BY {column} ORDER BY {column}")
    assert result.columns == [column, "n"]
    assert result.rows == expected


def test_replayed_batch_counts_each_event_once(store):
    batch = [feedback(i, "a" if i < 3 else "b") for i in range(5)]
    store.insert("feedback", batch)
    store.insert("feedback", batch)  # a replay after a crash re-delivers the same events
    exact = store.query("SELECT bug_pattern, count() FROM feedback FINAL GROUP BY bug_pattern ORDER BY bug_pattern")
    assert exact.rows == [("a", 3), ("b", 2)]
    store.command("OPTIMIZE TABLE feedback FINAL")  # after a merge the copies are gone for good
    assert store.query("SELECT count() FROM feedback").rows == [(5,)]


def test_parameters_are_bound_server_side(store):
    store.insert("feedback", [feedback(0, "it's"), feedback(1, "b", policy_version=3), feedback(2, "c")])
    result = store.query(
        "SELECT event_id FROM feedback FINAL"
        " WHERE bug_pattern IN {patterns:Array(String)} OR policy_version = {v:Int64} ORDER BY event_id",
        {"patterns": ["it's", "x"], "v": 3},
    )
    assert result.rows == [("ev000000",), ("ev000001",)]
    since = datetime.fromtimestamp((T0 + 2) / 1000, tz=timezone.utc)
    later = store.query("SELECT count() FROM feedback FINAL WHERE event_time >= {t:DateTime64(3, 'UTC')}", {"t": since})
    assert later.rows == [(1,)]


def test_event_time_and_nested_fields_round_trip(store):
    store.insert("feedback", [feedback(7, passed=(True, False, True))])
    row = store.query("SELECT event_time, test_outcomes, rename_passed, hack_flags FROM feedback FINAL").as_dicts()[0]
    assert row["event_time"] == datetime(2023, 11, 14, 22, 13, 20, 7000, tzinfo=timezone.utc)
    assert [(o["index"], o["passed"], o["error_kind"]) for o in row["test_outcomes"]] == [
        (0, True, "none"),
        (1, False, "wrong_answer"),
        (2, True, "none"),
    ]
    assert row["rename_passed"] is None and row["hack_flags"] == []  # n=7: odd, not a multiple of 3
    passed = store.query("SELECT countIf(o.passed) FROM feedback FINAL ARRAY JOIN test_outcomes AS o")
    assert passed.rows == [(2,)]


def test_metric_maps_and_dead_letter_bytes(store):
    store.insert("metrics", [metric(0, values={"loss": 0.25, "kl": 0.125})])
    assert store.query("SELECT `values`['kl'], labels['run'] FROM metrics").rows == [(0.125, "a")]
    store.insert("dead_letters", [dead_letter(0)])
    assert store.query("SELECT hex(value), key FROM dead_letters").rows == [("C301FF00", "g0")]


def test_kafka_coordinates_are_kept_or_defaulted(store):
    store.insert("policy", [{**policy(0, 1), "_topic": "policy", "_partition": 2, "_offset": 41}])
    store.insert("policy", [policy(1, 2)])
    rows = store.query("SELECT version, _topic, _partition, _offset FROM policy ORDER BY version").rows
    assert rows == [(1, "policy", 2, 41), (2, "", -1, -1)]


def test_bad_input_raises_typed_errors(store):
    with pytest.raises(UnknownTableError):
        store.insert("advantages.base", [advantage(0)])
    with pytest.raises(RowShapeError, match="row 1"):
        store.insert("policy", [policy(0), {k: v for k, v in policy(1).items() if k != "sha256"}])
    with pytest.raises(RowShapeError, match="sha256"):
        store.insert("policy", [{k: v for k, v in policy(0).items() if k != "sha256"}])
    with pytest.raises(QueryError):
        store.query("SELEC 1")
    assert store.insert("policy", []) == 0


# --- chDB only ------------------------------------------------------------------------


def test_data_persists_across_reopen(tmp_path):
    path = tmp_path / "db"
    with ChdbStore(path) as store:
        store.init_schema()
        store.insert("tasks", [task(0), task(1)])
    with ChdbStore(path) as reopened:
        assert reopened.query("SELECT task_id FROM tasks FINAL ORDER BY task_id").rows == [("t0",), ("t1",)]


def test_one_chdb_path_per_process(tmp_path):
    with ChdbStore(tmp_path / "a") as first:
        with pytest.raises(ChdbPathInUseError):
            ChdbStore(tmp_path / "b")
        with ChdbStore(tmp_path / "a" / ".." / "a") as same:  # same directory, other spelling
            same.init_schema()
            assert first.query("SELECT count() FROM system.tables WHERE database = currentDatabase()").rows == [
                (len(TABLES),)
            ]
    with ChdbStore(tmp_path / "b") as other:  # once the first path is released, another may open
        assert other.query("SELECT 1").rows == [(1,)]


def test_open_store_picks_backend(tmp_path):
    assert is_server_url("clickhouse://u:p@host:8123/db") and is_server_url("https://host:8443")
    assert not is_server_url(str(tmp_path)) and not is_server_url("chdb:///tmp/x")
    with open_store(f"chdb://{tmp_path / 'db'}") as store:
        assert isinstance(store, ChdbStore) and store.path == str((tmp_path / "db").resolve())


def test_unreachable_server_is_a_store_error_without_the_password():
    with pytest.raises(StoreError, match=r"clickhouse://\*\*\*@127\.0\.0\.1:1/db") as err:
        ClickHouseServerStore("clickhouse://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(err.value)
