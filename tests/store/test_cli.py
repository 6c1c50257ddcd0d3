import json

from typer.testing import CliRunner

from consumers.store import ChdbStore
from consumers.store.cli import store_app
from tests.store.conftest import feedback

runner = CliRunner()


def test_init_then_query_in_each_format(tmp_path):
    path = str(tmp_path / "db")
    result = runner.invoke(store_app, ["init", "--url", path])
    assert result.exit_code == 0, result.output
    with ChdbStore(path) as store:
        store.insert("feedback", [feedback(0, "a"), feedback(1, "b"), feedback(2, "b")])

    sql = "SELECT bug_pattern, count() AS n FROM feedback FINAL GROUP BY bug_pattern ORDER BY bug_pattern"
    as_csv = runner.invoke(store_app, ["query", sql, "--url", path, "--format", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    assert as_csv.output == "bug_pattern,n\na,1\nb,2\n"

    as_json = runner.invoke(store_app, ["query", sql, "--url", path, "--format", "json"])
    assert [json.loads(line) for line in as_json.output.splitlines()] == [
        {"bug_pattern": "a", "n": 1},
        {"bug_pattern": "b", "n": 2},
    ]

    as_table = runner.invoke(store_app, ["query", sql, "--url", path])
    assert "bug_pattern" in as_table.output and "│ b " in as_table.output


def test_bad_sql_exits_non_zero(tmp_path):
    path = str(tmp_path / "db")
    result = runner.invoke(store_app, ["query", "SELEC 1", "--url", path])
    assert result.exit_code == 1
    assert "error:" in result.output
