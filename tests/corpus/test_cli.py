"""The `tasks` command group: build a small corpus, then show it."""

from typer.testing import CliRunner

from producers.corpus.cli import tasks_app
from producers.corpus.records import read_tasks


def test_build_then_show(tmp_path):
    out = tmp_path / "tasks.jsonl"
    cli = CliRunner()
    built = cli.invoke(tasks_app, ["build", "--out", str(out), "--max-functions", "3",
                                   "--pattern", "wrong_return", "--no-humaneval", "--seed", "1"])
    assert built.exit_code == 0, built.output
    tasks = list(read_tasks(out))
    assert tasks and {t["bug_pattern"] for t in tasks} == {"wrong_return"}
    assert {t["source"] for t in tasks} == {"mbpp"}
    assert "wrong_return" in built.output and "validation" in built.output

    shown = cli.invoke(tasks_app, ["show", str(out), "--limit", "1"])
    assert shown.exit_code == 0, shown.output
    first = tasks[0]
    assert first["task_id"] in shown.output
    assert "(reference)" in shown.output and "(buggy)" in shown.output
    assert shown.output.count("hidden tests") == 1


def test_build_rejects_an_unknown_pattern(tmp_path):
    result = CliRunner().invoke(tasks_app, ["build", "--out", str(tmp_path / "x.jsonl"),
                                            "--pattern", "typo"])
    assert result.exit_code != 0
    assert not (tmp_path / "x.jsonl").exists()
