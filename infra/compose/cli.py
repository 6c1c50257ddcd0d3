"""The `reshaper` command line. Each component mounts its own sub-command group here."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
import yaml

from infra.platform.broker import InfraError, KafkaBroker

app = typer.Typer(help="reshaper: RL for code repair under weak feedback, with streamed signal reshaping.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
infra_app = typer.Typer(help="The local Apache Kafka broker (KRaft, single node).", no_args_is_help=True)
app.add_typer(infra_app, name="infra")


def _mount_components() -> None:
    """Each component owns its sub-commands; imports stay light (no torch at start-up)."""
    from consumers.store.cli import store_app

    app.add_typer(store_app, name="store", help="The ClickHouse store (chDB by default, or a server URL).")

    from producers.corpus.cli import tasks_app

    app.add_typer(tasks_app, name="tasks")

    from consumers.cli import sink

    app.command("sink")(sink)

    from learner.cli import learn

    app.command("learn")(learn)

    from producers.generator.cli import generate

    app.command("generate")(generate)

    from consumers.drift.cli import drift

    app.command("drift")(drift)

    from producers.evaluation.cli import eval_command, eval_sets_command, heldout_command

    app.command("eval")(eval_command)
    app.command("eval-sets")(eval_sets_command)
    app.command("heldout")(heldout_command)

    from streams.cli import replay, worker

    app.command("worker")(worker)
    app.command("replay")(replay)


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg="red", err=True)
    raise typer.Exit(1)


@infra_app.command("up")
def infra_up() -> None:
    """Fetch the broker's jars (once), format KRaft storage (once), start it, create the topics."""
    from confluent_kafka.admin import AdminClient

    from infra.platform.topics import Topics, ensure_topics

    broker = KafkaBroker()
    t0 = time.monotonic()
    try:
        status = broker.up()
        created = ensure_topics(AdminClient({"bootstrap.servers": status.bootstrap}), Topics().event_specs())
    except InfraError as exc:
        _fail(exc)
    typer.echo(f"kafka {broker.settings.kafka_version} running at {status.bootstrap} (pid {status.pid}) "
               f"in {time.monotonic() - t0:.1f}s; topics created: {', '.join(created) or 'none (all present)'}")


@infra_app.command("down")
def infra_down() -> None:
    """Stop the local broker (its data stays)."""
    typer.echo("stopped" if KafkaBroker().down() else "not running")


@infra_app.command("reset")
def infra_reset() -> None:
    """Stop the local broker and delete its data (topics, committed offsets)."""
    KafkaBroker().reset()
    typer.echo("broker stopped and its data deleted")


@infra_app.command("status")
def infra_status() -> None:
    """Is the local broker running, and do its topics match their specs?"""
    from confluent_kafka.admin import AdminClient

    from infra.platform.topics import Topics, verify_topics

    status = KafkaBroker().status()
    typer.echo(f"{status.bootstrap}: {status.detail}" + (f" (pid {status.pid})" if status.pid else ""))
    if status.running:
        problems = verify_topics(AdminClient({"bootstrap.servers": status.bootstrap}), Topics().event_specs())
        typer.echo("topics: " + ("all match their specs" if not problems else "; ".join(problems)))
    raise typer.Exit(0 if status.running else 3)


@app.command("run")
def run(config: Optional[Path] = typer.Option(None, "--config", exists=True, dir_okay=False, help="RunConfig YAML"),
        name: Optional[str] = typer.Option(None, help="run name (folder runs/<name>)"),
        steps: Optional[int] = typer.Option(None, help="learner steps"),
        model: Optional[str] = typer.Option(None, help="smollm2 | tiny | a local HF model directory"),
        reshaping: Optional[str] = typer.Option(None, help="reshaping preset (raw, full) or YAML"),
        resume: bool = typer.Option(False, "--resume", help="continue the run of that name where it stopped")) -> None:
    """The whole loop on one machine: broker, corpus, generator, Faust worker, learner, sink, report."""
    from infra.compose.orchestrator import Orchestrator, RunError
    from infra.compose.run_config import load_run_config

    cfg = load_run_config(config, name=name, steps=steps, model=model, reshaping=reshaping)
    if resume:
        if not name and not (config and "name" in (yaml.safe_load(config.read_text()) or {})):
            _fail(ValueError("--resume needs the --name of the run to continue"))
        recorded = cfg.run_dir / "run.yaml"
        if config is None and recorded.exists():  # continue with the config the run recorded
            cfg = load_run_config(recorded, steps=steps)
    elif not name and not (config and "name" in (yaml.safe_load(config.read_text()) or {})):
        cfg = cfg.model_copy(update={"name": time.strftime("run-%Y%m%d-%H%M%S")})  # every run its own folder
    try:
        Orchestrator(cfg, resume=resume).run()
    except RunError as exc:
        _fail(exc)


@app.command("experiment")
def experiment(config: Path = typer.Option(..., exists=True, dir_okay=False,
                                           help="ExperimentConfig YAML (presets/)"),
               report_only: bool = typer.Option(False, "--report-only",
                                                help="only rebuild results.json/.md, replay, audit and curves "
                                                     "from the committed per-run results"),
               rerun: Optional[str] = typer.Option(None, "--rerun", metavar="ARM:SEED",
                                                   help="train and evaluate one committed run again, into "
                                                        "<name>-rerun/, and say how close the two came")) -> None:
    """Bring every run (arm x seed) to complete: skip finished ones, resume cut ones, redo lost
    ones; each is evaluated and its results written as soon as it has trained. Then the tables."""
    from infra.compose.experiment import ExperimentConfig, rerun as rerun_unit, run_experiment, write_report
    from infra.compose.experiment_rerun import agreement_markdown

    cfg = ExperimentConfig.from_yaml(config)
    if rerun:
        arm, _, seed = rerun.rpartition(":")
        if not arm or not seed.isdigit():
            raise typer.BadParameter(f"--rerun takes ARM:SEED (e.g. raw-ds:0), got {rerun!r}")
        try:
            typer.echo(agreement_markdown(rerun_unit(cfg, arm, int(seed))))
        except ValueError as exc:
            _fail(exc)
        return
    if report_only:
        write_report(cfg)
    else:
        run_experiment(cfg)
    typer.echo((cfg.dir / "results.md").read_text())
    typer.echo(f"experiment folder: {cfg.dir}")


_mount_components()

if __name__ == "__main__":
    app()
