"""Reports: a PNG per query, empty results, bad input, and the typer command."""

import io

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from consumers.drift import (
    BadSinceError,
    MissingParameterError,
    DriftError,
    UnknownQueryError,
    drift,
    drift_names,
    load_query,
    run_drift,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ARGS = {
    "reward_by_version": {"config": "base"},
    "reward_by_window": {"config": "base"},
    "pattern_success": {},
    "hack_rates": {},
    "evaluation_reliability": {},
    "proxy_vs_heldout": {"config": "base"},
    "config_compare": {"config": "base", "config_b": "tuned"},
    "learner_health": {"config": "base"},
    "excluded_by_version": {"config": "governed"},
    "review_agreement": {},
}


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_every_query_is_listed_with_a_summary():
    assert drift_names() == sorted(ARGS)
    for name in drift_names():
        query = load_query(name)
        assert "since" in query.parameters
        assert len(query.summary) > 20 and not query.summary.startswith("--")


@pytest.mark.parametrize("name", sorted(ARGS))
def test_every_query_writes_a_png(history, tmp_path, name):
    console = quiet()
    report = run_drift(history, name, out_dir=tmp_path, console=console, **ARGS[name])
    assert report.rows
    assert report.png_path == tmp_path / f"{name}.png"
    data = report.png_path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    printed = console.file.getvalue()
    assert name in printed and report.columns[0] in printed


def test_empty_result_says_so_and_writes_no_png(history, tmp_path):
    console = quiet()
    report = run_drift(history, "hack_rates", since="2100-01-01", out_dir=tmp_path, console=console)
    assert report.empty and report.png_path is None and report.flags == []
    assert "no rows" in console.file.getvalue()
    assert list(tmp_path.iterdir()) == []
    unknown = run_drift(history, "config_compare", config="base", config_b="nope", out_dir=tmp_path, console=quiet())
    assert unknown.empty  # nothing matched: no rows rather than a row of NaNs


def test_bad_input_raises_typed_errors(history, tmp_path):
    with pytest.raises(UnknownQueryError, match="reward_by_version"):
        run_drift(history, "no_such_query", out_dir=tmp_path, console=quiet())
    with pytest.raises(MissingParameterError, match="config"):
        run_drift(history, "reward_by_version", out_dir=tmp_path, console=quiet())
    with pytest.raises(MissingParameterError, match="config_b"):
        run_drift(history, "config_compare", config="base", out_dir=tmp_path, console=quiet())
    with pytest.raises(DriftError, match="window_s"):
        run_drift(history, "hack_rates", window_s=0, out_dir=tmp_path, console=quiet())
    with pytest.raises(BadSinceError):
        run_drift(history, "hack_rates", since="last tuesday", out_dir=tmp_path, console=quiet())


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(drift)
    return app


def test_cli_runs_a_query_lists_and_reports_errors(history, history_path, tmp_path):
    runner = CliRunner(env={"COLUMNS": "200"})  # rich wraps tables to the terminal width
    out = tmp_path / "charts"
    ok = runner.invoke(_app(), ["pattern_success", "--store", str(history_path), "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "pattern_regression [wrong_operator]: success 0.500 -> 0.000" in ok.output
    assert (out / "pattern_success.png").read_bytes().startswith(PNG_MAGIC)

    listed = runner.invoke(_app(), ["list"])
    assert listed.exit_code == 0
    assert all(name in listed.output for name in drift_names())

    empty = runner.invoke(_app(), ["hack_rates", "--since", "2100-01-01", "--store", str(history_path),
                                   "--out", str(out)])
    assert empty.exit_code == 0 and "no rows" in empty.output

    bad = runner.invoke(_app(), ["reward_by_version", "--store", str(history_path), "--out", str(out)])
    assert bad.exit_code == 2 and "needs config" in bad.output
    # the store the CLI opened and closed on the same path did not close the fixture's engine
    assert history.query("SELECT count() FROM feedback FINAL").rows == [(32,)]


def test_cli_reports_a_second_chdb_path_as_an_error(tmp_path, history):
    # history holds its own path open: chDB cannot open another in this process
    runner = CliRunner(env={"COLUMNS": "200"})
    result = runner.invoke(_app(), ["hack_rates", "--store", str(tmp_path / "other"), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "error: chDB already runs on" in result.output
