"""What carrying the task's imports into a candidate changes, on the completions of a report.

    python -m producers.evaluation.import_effect --report runs/x/eval/validation-v0.json \
        --tasks eval_sets/validation.jsonl

The report's completions are scored twice, without and with the rule of
`schemas.prompt.carry_task_imports` (generation is not repeated, so the two
sides differ by the rule alone), and the NameErrors on a name the task imports, success@1
and mean pass fraction are printed side by side. `--json` writes the figures too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from producers.evaluation.eval import EVAL_EVALUATOR, rescore
from producers.evaluation.taskfile import read_eval_tasks
from streams.sandbox import SandboxConfig, SandboxPool


def import_effect(report: dict, tasks: list[dict], pool: SandboxPool) -> dict:
    """{"before": ..., "after": ...}: NameErrors on task imports, success@1 and pass fraction."""
    sides = {}
    for side, carry in (("before", False), ("after", True)):
        scored = rescore(report, tasks, pool, EVAL_EVALUATOR.model_copy(update={"carry_task_imports": carry}))
        sides[side] = {"candidates": scored.overall.candidates, "tasks": scored.overall.tasks,
                       "import_name_errors": scored.import_name_errors,
                       "success_at_1": scored.overall.success_at_1,
                       "mean_pass_fraction": scored.overall.mean_pass_fraction}
    return sides


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, required=True, help="an eval report JSON (with candidates)")
    parser.add_argument("--tasks", type=Path, required=True, help="the bug set the report was made on")
    parser.add_argument("--workers", type=int, default=2, help="sandbox processes")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    if "candidates" not in report:
        parser.error(f"{args.report}: the report holds no candidates")
    with SandboxPool(SandboxConfig(workers=args.workers)) as pool:
        sides = import_effect(report, read_eval_tasks(args.tasks), pool)
    print(f"{args.report} on {args.tasks}: {sides['after']['tasks']} tasks, {sides['after']['candidates']} candidates")
    print(f"{'':24}{'before':>10}{'after':>10}")
    for key in ("import_name_errors", "success_at_1", "mean_pass_fraction"):
        b, a = sides["before"][key], sides["after"][key]
        fmt = (lambda x: f"{x:>10d}") if key == "import_name_errors" else (lambda x: f"{x:>10.3f}")
        print(f"{key:24}{fmt(b)}{fmt(a)}")
    if args.json:
        args.json.write_text(json.dumps(sides, indent=2))
    return sides


if __name__ == "__main__":
    main()
