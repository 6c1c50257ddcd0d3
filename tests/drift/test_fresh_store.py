"""The command on a store nobody has written to (no history fixture in this module, so
this test may open its own chDB path)."""

import typer
from typer.testing import CliRunner

from consumers.drift import drift


def test_store_without_tables_gets_a_hint_not_a_traceback(tmp_path):
    app = typer.Typer()
    app.command()(drift)
    result = CliRunner().invoke(app, ["hack_rates", "--store", str(tmp_path / "chdb"), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "UNKNOWN_TABLE" in result.output and "reshaper store init" in result.output
