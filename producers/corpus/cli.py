"""`reshaper tasks ...`: build a bug corpus to a JSONL file and look inside one."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from producers.corpus.build import build_corpus
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.records import read_tasks, write_tasks
from producers.corpus.runner import sandbox_runner
from producers.corpus.summary import SPLIT_ORDER, bug_diff, counts_by_pattern_and_split

tasks_app = typer.Typer(help="Build the bug corpus (tasks) and inspect task files.",
                        no_args_is_help=True)
console = Console()


def counts_table(tasks: list[dict]) -> Table:
    table = Table("bug pattern", *SPLIT_ORDER, "total", title=f"{len(tasks)} tasks")
    counts = counts_by_pattern_and_split(tasks)
    for pattern, by_split in counts.items():
        table.add_row(pattern, *(str(by_split[s]) for s in SPLIT_ORDER), str(sum(by_split.values())))
    totals = [sum(c[s] for c in counts.values()) for s in SPLIT_ORDER]
    table.add_row("all", *map(str, totals), str(sum(totals)), style="bold")
    return table


@tasks_app.command()
def build(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the split and the bug sites.")] = 0,
    max_functions: Annotated[Optional[int], typer.Option(
        help="Only the first N functions of each source.")] = None,
    validation_fraction: Annotated[float, typer.Option(help="Share of MBPP in validation.")] = 0.2,
    pattern: Annotated[Optional[list[str]], typer.Option(
        "--pattern", "-p", help="Bug pattern to inject (repeat; default all).")] = None,
    mutants_per_pattern: Annotated[int, typer.Option(
        help="Bugs per function and pattern.")] = 1,
    humaneval: Annotated[bool, typer.Option(help="Add the HumanEval held-out split.")] = True,
    heldout_pattern: Annotated[Optional[list[str]], typer.Option(
        "--heldout-pattern", help="Bug pattern held out of training (repeat): built on validation "
                                  "functions only, split `heldout_pattern`.")] = None,
    visible_test: Annotated[bool, typer.Option(
        help="Show a bug's first failing test with its error (when it fails two or more).")] = True,
    workers: Annotated[int, typer.Option(help="Sandbox workers.")] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds per test run.")] = 5.0,
) -> None:
    """Inject bugs into MBPP (and HumanEval), keep those the tests catch, write JSONL."""
    settings = dict(seed=seed, max_functions=max_functions, validation_fraction=validation_fraction,
                    mutants_per_function_per_pattern=mutants_per_pattern,
                    include_humaneval=humaneval, eval_workers=workers, eval_timeout_s=timeout,
                    heldout_patterns=tuple(heldout_pattern or ()), visible_failing_test=visible_test)
    if pattern:
        settings["patterns"] = tuple(pattern)
    try:
        config = CorpusBuildConfig(**settings)
    except ValidationError as err:
        raise typer.BadParameter(str(err)) from err
    started = time.monotonic()
    with sandbox_runner(config.eval_workers, config.eval_timeout_s) as runner:
        tasks, stats = build_corpus(config, runner)
    write_tasks(out, tasks)
    console.print(counts_table(tasks))
    console.print(f"{stats.functions} functions with working references; "
                  f"skipped: {len(stats.references_failing)} failing in the sandbox, "
                  f"{len(stats.unparseable)} not parsed by libcst; "
                  f"{time.monotonic() - started:.0f} s; wrote {out}")


@tasks_app.command()
def show(
    file: Annotated[Path, typer.Argument(help="Task JSONL file.", exists=True, dir_okay=False)],
    pattern: Annotated[Optional[str], typer.Option(help="Only this bug pattern.")] = None,
    split: Annotated[Optional[str], typer.Option(help="Only this split.")] = None,
    limit: Annotated[int, typer.Option(help="Show at most this many tasks.")] = 5,
) -> None:
    """Print tasks with the diff from reference to buggy code."""
    wanted = (t for t in read_tasks(file)
              if (pattern is None or t["bug_pattern"] == pattern)
              and (split is None or t["split"] == split))
    for task in itertools.islice(wanted, limit):
        console.rule(escape(f"{task['task_id']}  [{task['split']}]  difficulty {task['difficulty']}"))
        if task["description"]:
            console.print(escape(task["description"].strip().splitlines()[0]))
        console.print(Syntax(bug_diff(task), "diff", theme="ansi_dark"))
        console.print(escape(f"{len(task['tests'])} hidden tests, e.g. {task['tests'][0]}"))
        for test in task.get("visible_tests", []):
            console.print(escape(f"visible test: {test}  ->  {task['error_context']}"))


@tasks_app.command()
def publish(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="tasks JSONL written by `build`")],
    split: Annotated[Optional[list[str]], typer.Option(help="only these splits (repeatable); default: all")] = None,
    bootstrap: Annotated[Optional[str], typer.Option(help="Kafka bootstrap servers; default: the local broker")] = None,
) -> None:
    """Publish tasks to the `tasks` topic, keyed by task_id."""
    from infra.platform.topics import Topics
    from producers.task_publisher import publish_tasks

    tasks = [t for t in read_tasks(path) if not split or t["split"] in split]
    delivered = publish_tasks(tasks, bootstrap)
    Console().print(f"published {delivered} tasks to '{Topics().tasks}'")
