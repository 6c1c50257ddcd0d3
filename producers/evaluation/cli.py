"""Typer commands: `reshaper eval`, `reshaper eval-sets`.

    app.command("eval")(eval_command); app.command("eval-sets")(eval_sets_command)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from producers.evaluation.run_folder import base_model_dir, final_policy


def _policy(model: Path | None, run: Path | None, policy_version: int | None) -> tuple[Path, Path | None, int]:
    """(base model dir, adapter dir or None, version) from --model or --run [--policy-version]."""
    if (model is None) == (run is None):
        raise typer.BadParameter("give exactly one of --model DIR or --run RUNDIR")
    if model is not None:
        return model, None, 0
    if policy_version == 0:
        return base_model_dir(run), None, 0
    if policy_version is None:
        adapter, version = final_policy(run)
    else:
        adapter, version = run / "policy" / f"v-{policy_version:08d}", policy_version
    if adapter is None or not adapter.exists():
        raise typer.BadParameter(f"{run}: no published policy {'v' + str(policy_version) if policy_version else ''}")
    return base_model_dir(run), adapter, version


def default_report_path(tasks: Path, model: Path | None, run: Path | None, version: int, greedy_only: bool,
                        error_context: bool = False) -> Path:
    """Where a report goes without --out: in the policy's run folder (runs/<name>/eval/), or for
    a bare --model in runs/eval-<model name>/; named by bug set, policy version and mode."""
    folder = run / "eval" if run is not None else Path("runs") / f"eval-{model.name}"
    mode = ("-greedy" if greedy_only else "") + ("-error-context" if error_context else "")
    return folder / f"{tasks.stem}-v{version}{mode}.json"


def eval_command(
    tasks: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="bug set JSONL (see taskfile.py)")],
    model: Annotated[Optional[Path], typer.Option(help="a Hugging Face model directory")] = None,
    run: Annotated[Optional[Path], typer.Option(help="a run folder (runs/<name>)")] = None,
    policy_version: Annotated[
        Optional[int], typer.Option(help="policy version of --run (default newest; 0: base)")
    ] = None,
    k: Annotated[int, typer.Option(help="pass@k")] = 4,
    n: Annotated[Optional[int], typer.Option(help="samples per task (default k)")] = None,
    greedy_only: Annotated[bool, typer.Option("--greedy-only", help="only the greedy repair (success@1)")] = False,
    limit: Annotated[Optional[int], typer.Option(min=1, help="at most N tasks, spread over functions")] = None,
    temperature: Annotated[float, typer.Option(help="temperature of the n samples")] = 0.8,
    max_new_tokens: Annotated[int, typer.Option(help="completion cap")] = 256,
    seed: Annotated[int, typer.Option(help="sampling seed")] = 0,
    backend: Annotated[str, typer.Option(help="transformers (exact reference) or ctranslate2")] = "transformers",
    compute_type: Annotated[str, typer.Option(help="ctranslate2 weights: float32 or int8")] = "float32",
    out: Annotated[
        Optional[Path], typer.Option(help="report JSON (default: in the run folder, runs/<name>/eval/)")
    ] = None,
    error_context: Annotated[bool, typer.Option(
        "--error-context", help="show each task's visible test and its error in the prompt (never scored)")] = False,
    workers: Annotated[int, typer.Option(help="sandbox processes")] = 2,
    bootstrap: Annotated[Optional[str], typer.Option(help="also publish an `eval` Metric to this Kafka")] = None,
) -> None:
    """Evaluate a policy on a bug set: success@1, pass@k, pass fraction, edit distance, style, hacks."""
    from producers.evaluation.eval import evaluate_policy, publish_eval_metric, render_table
    from producers.evaluation.taskfile import read_eval_tasks, spread_over_functions
    from streams.sandbox import SandboxConfig, SandboxPool

    if backend not in ("transformers", "ctranslate2"):
        raise typer.BadParameter(f"--backend must be transformers or ctranslate2, got {backend!r}")
    if compute_type not in ("float32", "int8"):
        raise typer.BadParameter(f"--compute-type must be float32 or int8, got {compute_type!r}")
    base, adapter, version = _policy(model, run, policy_version)
    bug_set = read_eval_tasks(tasks)
    if limit is not None:
        bug_set = spread_over_functions(bug_set, limit)
    out = out or default_report_path(tasks, model, run, version, greedy_only, error_context)
    with SandboxPool(SandboxConfig(workers=workers)) as pool:
        report = evaluate_policy(base, bug_set, adapter=adapter, policy_version=version, k=k, n=n,
                                 temperature=temperature, max_new_tokens=max_new_tokens, pool=pool, seed=seed,
                                 progress=True, greedy_only=greedy_only, backend=backend, compute_type=compute_type,
                                 include_error_context=error_context)
    report.write_json(out)
    render_table(report)
    if bootstrap:
        publish_eval_metric(report, bootstrap, eval_set=tasks.stem)
    typer.echo(f"report in {out}")


def eval_sets_command(
    out_dir: Annotated[Path, typer.Option(
        help="folder for validation.jsonl, humaneval.jsonl (and heldout_pattern.jsonl)")] = Path("eval_sets"),
    corpus: Annotated[Optional[Path], typer.Option(help="a corpus JSONL (default: build/cache one)")] = None,
    seed: Annotated[int, typer.Option(help="corpus seed (when building)")] = 0,
    max_functions: Annotated[Optional[int], typer.Option(help="corpus size cap (when building)")] = None,
    heldout_pattern: Annotated[Optional[list[str]], typer.Option(
        "--heldout-pattern", help="bug pattern held out of training (repeat; when building)")] = None,
    limit: Annotated[Optional[int], typer.Option(help="tasks per set")] = None,
) -> None:
    """Write the held-out bug sets of a corpus: validation split, HumanEval with injected bugs,
    and, when patterns are held out, the held-out bug-pattern set."""
    from producers.evaluation.converters import EVAL_SETS, OPTIONAL_EVAL_SETS, EmptyEvalSetError, convert_corpus

    if corpus is None:
        from producers.corpus import CorpusBuildConfig, cached_build

        corpus = cached_build(CorpusBuildConfig(seed=seed, max_functions=max_functions,
                                                heldout_patterns=tuple(heldout_pattern or ())))
    for name in EVAL_SETS:
        try:
            count = convert_corpus(corpus, out_dir / f"{name}.jsonl", name, limit=limit)
        except EmptyEvalSetError:
            if name in OPTIONAL_EVAL_SETS:
                continue  # a corpus built without held-out patterns
            raise
        typer.echo(f"{out_dir / f'{name}.jsonl'}: {count} tasks")


def heldout_command(
    config: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="HeldoutRunConfig YAML")],
) -> None:
    """Evaluate every Nth policy version on a fixed held-out set while a run trains; publish `eval` metrics."""
    import signal

    from producers.evaluation.periodic import HeldoutRunConfig, PeriodicEvaluator

    cfg = HeldoutRunConfig.from_yaml(config)
    stopping = {"now": False}  # SIGTERM ends the loop between evaluations, never inside one
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    evaluator = PeriodicEvaluator(cfg)
    try:
        done = evaluator.run(lambda: stopping["now"])
    finally:
        evaluator.close()
    typer.echo(f"evaluated policy versions {done}")
