"""The `reshaper` command line. Each component mounts its own sub-command group here."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
import yaml

from infra.platform.broker import InfraError, KafkaCluster
from infra.platform.settings import ClusterSettings

app = typer.Typer(help="reshaper: RL for code repair under weak feedback, with streamed signal reshaping.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
infra_app = typer.Typer(help="The local Apache Kafka broker (KRaft, one node) or a local cluster.",
                        no_args_is_help=True)
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

    from consumers.dashboard.cli import dashboard

    app.command("dashboard")(dashboard)

    from consumers.tensorboard.writer import tensorboard

    app.command("tensorboard")(tensorboard)

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


BrokersOption = typer.Option(None, "--brokers", min=1, max=9,
                             help="nodes: 1 (the default, or $RESHAPER_KAFKA_BROKERS) or a local cluster, e.g. 3")


def _cluster(brokers: Optional[int]) -> KafkaCluster:
    return KafkaCluster(ClusterSettings(brokers=brokers) if brokers else ClusterSettings())


@infra_app.command("up")
def infra_up(brokers: Optional[int] = BrokersOption) -> None:
    """Fetch the broker's jars (once), format KRaft storage (once), start the node(s), create the topics."""
    from confluent_kafka.admin import AdminClient

    from infra.platform.settings import replication_for
    from infra.platform.topics import Topics, ensure_topics

    cluster = _cluster(brokers)
    n = len(cluster.nodes)
    t0 = time.monotonic()
    try:
        statuses = cluster.up()
        created = ensure_topics(AdminClient({"bootstrap.servers": cluster.bootstrap}),
                                Topics().event_specs(replication=replication_for(n)[0]))
    except InfraError as exc:
        _fail(exc)
    pids = ", ".join(str(s.pid) for s in statuses)
    typer.echo(f"kafka {cluster.nodes[0].settings.kafka_version} running at {cluster.bootstrap} (pid {pids}) "
               f"in {time.monotonic() - t0:.1f}s; topics created: {', '.join(created) or 'none (all present)'}")
    if n > 1:
        factor, min_isr = replication_for(n)
        typer.echo(f"{n} nodes, topics replicated {factor}x with min.insync.replicas {min_isr}; components reach "
                   f"it with: export RESHAPER_KAFKA_BROKERS={n} RESHAPER_BOOTSTRAP={cluster.bootstrap}")


@infra_app.command("down")
def infra_down(brokers: Optional[int] = BrokersOption) -> None:
    """Stop the local broker or cluster (the data stays)."""
    typer.echo("stopped" if _cluster(brokers).down() else "not running")


@infra_app.command("reset")
def infra_reset(brokers: Optional[int] = BrokersOption) -> None:
    """Stop the local broker or cluster and delete its data (topics, committed offsets)."""
    _cluster(brokers).reset()
    typer.echo("stopped and its data deleted")


@infra_app.command("status")
def infra_status(brokers: Optional[int] = BrokersOption) -> None:
    """Is every local node running, and do the topics match their specs?"""
    from confluent_kafka.admin import AdminClient

    from infra.platform.settings import replication_for
    from infra.platform.topics import Topics, verify_topics

    cluster = _cluster(brokers)
    statuses = cluster.status()
    for status in statuses:
        typer.echo(f"{status.bootstrap}: {status.detail}" + (f" (pid {status.pid})" if status.pid else ""))
    running = any(s.running for s in statuses)
    if running:
        specs = Topics().event_specs(replication=replication_for(len(statuses))[0])
        problems = verify_topics(AdminClient({"bootstrap.servers": cluster.bootstrap}), specs)
        typer.echo("topics: " + ("all match their specs" if not problems else "; ".join(problems)))
    raise typer.Exit(0 if all(s.running for s in statuses) else 3)


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


@app.command("sanity")
def sanity(
    run: Annotated[Path, typer.Option(exists=True, file_okay=False, help="a trained run folder (runs/<name>)")],
    tasks: Annotated[int, typer.Option(min=1, help="at most N training tasks whose groups carried a signal")] = 50,
    n: Annotated[int, typer.Option(min=1, help="sampled repairs per task and model")] = 4,
    seed: Annotated[int, typer.Option(help="sampling seed (the same for both models)")] = 0,
    backend: Annotated[str, typer.Option(help="transformers or ctranslate2")] = "ctranslate2",
    compute_type: Annotated[str, typer.Option(help="ctranslate2 weights: float32 or int8")] = "float32",
    workers: Annotated[int, typer.Option(help="sandbox processes")] = 2,
    out: Annotated[Optional[Path], typer.Option(help="report JSON (default runs/<name>/eval/sanity.json)")] = None,
) -> None:
    """The learning sanity check: base against the run's final policy, sampled as in training, on
    the training tasks whose groups carried a signal; passes when the paired interval of the
    pass-rate difference lies above zero (producers/evaluation/sanity.py)."""
    import json
    import time

    from infra.compose.run_config import load_run_config
    from producers.corpus import cached_build, read_tasks
    from producers.evaluation.eval import evaluate_policy
    from infra.compose.run_history import run_feedback, run_store
    from producers.evaluation.run_folder import base_model_dir, final_policy
    from producers.evaluation.sanity import sanity_summary, signal_task_ids
    from producers.evaluation.taskfile import normalise_task
    from streams.sandbox import SandboxConfig, SandboxPool

    if backend not in ("transformers", "ctranslate2"):
        raise typer.BadParameter(f"--backend must be transformers or ctranslate2, got {backend!r}")
    if not (run / "run.yaml").exists():
        raise typer.BadParameter(f"{run}: no run.yaml, not a run folder")
    run_cfg = load_run_config(run / "run.yaml")
    adapter, version = final_policy(run)
    if adapter is None:
        raise typer.BadParameter(f"{run}: no published policy to compare with the base model")
    with run_store(run) as store:
        feedback = run_feedback(store, run_cfg.name)
    task_ids = signal_task_ids(feedback, tasks)
    if not task_ids:
        raise typer.BadParameter(f"{run}: no group of its {len(feedback)} rollouts carried a signal")
    wanted = set(task_ids)
    records = {r["task_id"]: r for r in read_tasks(cached_build(run_cfg.corpus_config())) if r["task_id"] in wanted}
    chosen = [normalise_task(records[t], t) for t in task_ids]
    settings = dict(k=1, n=n, temperature=run_cfg.temperature, max_new_tokens=run_cfg.max_new_tokens, seed=seed,
                    backend=backend, compute_type=compute_type, progress=True,
                    include_error_context=run_cfg.generator.include_error_context,
                    max_error_chars=run_cfg.generator.max_error_chars)
    t0 = time.monotonic()
    with SandboxPool(SandboxConfig(workers=workers)) as pool:
        base = evaluate_policy(base_model_dir(run), chosen, pool=pool, **settings)
        trained = evaluate_policy(base_model_dir(run), chosen, adapter=adapter, policy_version=version, pool=pool,
                                  **settings)
    report = {"run": run_cfg.name, "policy_version": version, "rollouts": len(feedback), "n": n,
              "temperature": run_cfg.temperature, "max_new_tokens": run_cfg.max_new_tokens, "seed": seed,
              "backend": backend, "compute_type": compute_type if backend == "ctranslate2" else None,
              **sanity_summary(base.candidates, trained.candidates),
              "seconds": round(time.monotonic() - t0, 1), "task_ids": task_ids}
    out = out or run / "eval" / "sanity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    d = report["sample_pass_rate_difference"]
    typer.echo(f"{report['tasks']} training tasks x {n} samples: pass rate {report['sample_pass_rate_base']:.3f} "
               f"-> {report['sample_pass_rate_trained']:.3f}, difference {d['mean']:+.3f} [{d['low']:+.3f}, "
               f"{d['high']:+.3f}]: {'raised' if report['raised'] else 'NOT raised'}")
    typer.echo(f"report in {out}")


_mount_components()

if __name__ == "__main__":
    app()
