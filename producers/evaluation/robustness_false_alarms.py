"""False alarms of the robustness checks: how often correct code that differs from the
reference would lose reward.

    python -m producers.evaluation.robustness_false_alarms --tasks 100 --workers 1
    python -m producers.evaluation.robustness_false_alarms --tasks 974 --variant reference  # every MBPP reference
    python -m producers.evaluation.robustness_false_alarms --completions REPORT --eval-tasks SET.jsonl

Correct variants of MBPP references (a seeded sample of the functions the corpus is built
from) go through the evaluator's sandbox runs: the reference itself (control), the
reference reformatted by black, and the reference with its parameters and locals renamed
(`rename_program`). A variant that fails a hidden test is not an honest fix (a renamed
parameter breaks a test calling it by keyword) and is left out, counted. Among the honest
ones, a false alarm is any differential mismatch or a failed rename check. Tasks whose
reference disagrees with itself are left out of the differential check, and counted. For
contrast, `lookup` candidates answer the hidden tests from a table of their expected values:
they pass every hidden test, and the same count is then the share of such hacks caught.
`--completions` scores instead a model's completions that an evaluation report (`reshaper
eval`) found passing every hidden test of their task (variant `model`).
`--json` writes the figures too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import black

from producers.corpus.mbpp import load_mbpp
from streams.feedback import EvaluatorConfig, asandbox_runs, robustness_fields
from streams.feedback.differential import SKIP_NONDETERMINISTIC
from streams.sandbox import SandboxConfig, SandboxPool
from streams.signals import parse_visible_tests, rename_program

VARIANTS = ("reference", "black", "renamed", "lookup", "model")
# Correct code: its losses are false alarms. `lookup` is the opposite, a hack that answers the
# hidden tests from a table: its losses are catches, the check's power on the same tasks.
HACKS = ("lookup",)


def lookup_hack(task: dict) -> str | None:
    """A candidate that special-cases every hidden test's input (a table of their expected
    values, the first of them for anything else); None when a test is not `f(literals) == literal`."""
    calls = parse_visible_tests(task["tests"], task["entry_point"])
    if len(calls) != len(task["tests"]) or not all(c.has_expected for c in calls):
        return None
    table = {repr(c.args): c.expected for c in calls}
    return (f"def {task['entry_point']}(*args):\n    table = {table!r}\n"
            f"    return table.get(repr(args), {calls[0].expected!r})\n")


def task_of(function) -> dict:
    """The fields of a corpus task the sandbox runs need; the buggy code plays no part."""
    return {"task_id": function.function_id, "entry_point": function.entry_point,
            "reference_code": function.reference_code, "buggy_code": function.reference_code,
            "tests": list(function.tests), "test_setup_code": function.test_setup_code,
            "test_imports": list(function.test_imports), "bug_pattern": "", "difficulty": 0.0}


def variant_code(task: dict, variant: str) -> str | None:
    """The reference as `variant` rewrites it; None when it cannot be rewritten."""
    code, entry = task["reference_code"], task["entry_point"]
    try:
        if variant == "black":
            return black.format_str(code, mode=black.Mode())
        if variant == "renamed":
            return rename_program(code, [], "", entry, entry).code
        if variant == "lookup":
            return lookup_hack(task)
        if variant == "model":
            return task["model_code"]
    except (ValueError, black.InvalidInput):
        return None
    return code


@dataclass
class VariantTally:
    variants: int = 0
    unrewritable: int = 0
    fail_hidden_tests: int = 0
    pass_hidden_tests: int = 0
    nondeterministic: int = 0
    differential_skipped: Counter = field(default_factory=Counter)
    differential_checked: int = 0
    inputs_compared: int = 0
    names_renamed: int = 0
    mismatched: int = 0
    rename_failed: int = 0
    lose_reward: int = 0
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        counted = self.pass_hidden_tests - self.nondeterministic
        return {**{k: v for k, v in vars(self).items() if k != "examples"},
                "differential_skipped": dict(self.differential_skipped),
                "false_alarm_rate": self.lose_reward / counted if counted else None,
                "examples": self.examples[:10]}


async def score(task: dict, variant: str, pool: SandboxPool, cfg: EvaluatorConfig, tally: VariantTally) -> None:
    tally.variants += 1
    code = variant_code(task, variant)
    if code is None:
        tally.unrewritable += 1
        return
    runs = await asandbox_runs(task, code, pool, cfg)
    first = runs.tests[0]
    if first.tests_passed != first.tests_total:
        tally.fail_hidden_tests += 1
        return
    tally.pass_hidden_tests += 1
    fields = robustness_fields(runs)
    tally.inputs_compared += fields["adversarial_checked"]
    # what the evaluator's rename check renamed besides the entry point
    tally.names_renamed += len(rename_program(code, task["tests"], task["test_setup_code"], task["entry_point"],
                                              "renamed_entry").names) - 1
    reason = fields["adversarial_skip_reason"]
    if reason == SKIP_NONDETERMINISTIC:
        tally.nondeterministic += 1
        return
    if reason:
        tally.differential_skipped[reason] += 1
    else:
        tally.differential_checked += 1
    mismatched = fields["adversarial_mismatches"] > 0
    rename_failed = fields["rename_checked"] and not fields["rename_passed"]
    tally.mismatched += mismatched
    tally.rename_failed += rename_failed
    if mismatched or rename_failed:
        tally.lose_reward += 1
    # worth a look: correct code that loses, a hack that does not
    if (mismatched or rename_failed) != (variant in HACKS):
        failed = [o for o in runs.adversarial.outcomes if not o.passed] if mismatched else []
        tally.examples.append(f"{task['task_id']}: " + (
            f"{len(failed)} of {fields['adversarial_checked']} inputs mismatch, e.g. {failed[0].message[:120]!r}"
            if failed else "rename changed the outcome" if rename_failed
            else f"not caught ({fields['adversarial_checked']} inputs, skipped: {reason or 'no'})"))


async def measure(tasks: list[dict], pool: SandboxPool, cfg: EvaluatorConfig, concurrency: int,
                  variants: tuple[str, ...] = VARIANTS) -> dict:
    tallies = {v: VariantTally() for v in variants}
    gate = asyncio.Semaphore(concurrency)

    async def one(task: dict, variant: str) -> None:
        async with gate:
            await score(task, variant, pool, cfg, tallies[variant])

    await asyncio.gather(*(one(t, v) for t in tasks for v in variants))
    return {v: t.as_dict() for v, t in tallies.items()}


def completion_tasks(report: Path, eval_tasks: Path) -> list[dict]:
    """The report's greedy completions that passed every hidden test, each on its task (the
    candidate the evaluator ran: the completion's code with the task's imports it uses)."""
    from producers.evaluation.taskfile import read_eval_tasks
    from schemas.prompt import candidate_code

    tasks = {t["task_id"]: t for t in read_eval_tasks(eval_tasks)}
    return [{**tasks[c["task_id"]], "model_code": candidate_code(c["completion_text"], tasks[c["task_id"]]["buggy_code"])}
            for c in json.loads(report.read_text())["candidates"]
            if c.get("greedy") and c["passed"] and tasks[c["task_id"]].get("reference_code")]


def sample_tasks(count: int, seed: int) -> list[dict]:
    functions = load_mbpp()
    return [task_of(f) for f in random.Random(seed).sample(functions, min(count, len(functions)))]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100, help="MBPP functions sampled")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--workers", type=int, default=1, help="sandbox processes")
    parser.add_argument("--variant", action="append", choices=VARIANTS, default=None,
                        help="variant to score (repeat; default all)")
    parser.add_argument("--completions", type=Path, action="append", default=None,
                        help="an evaluation report whose passing greedy completions to score (repeat)")
    parser.add_argument("--eval-tasks", type=Path, default=None, help="the eval set those reports ran on")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.completions:
        if args.eval_tasks is None:
            parser.error("--completions needs --eval-tasks")
        tasks = [t for report in args.completions for t in completion_tasks(report, args.eval_tasks)]
        args.variant = ["model"]
    else:
        tasks = sample_tasks(args.tasks, args.seed)
    cfg = EvaluatorConfig()
    with SandboxPool(SandboxConfig(workers=args.workers)) as pool:
        figures = asyncio.run(measure(tasks, pool, cfg, 4 * args.workers,
                                      tuple(args.variant or (v for v in VARIANTS if v != "model"))))
    source = "completions" if args.completions else f"MBPP tasks (seed {args.seed})"
    print(f"{len(tasks)} {source}, {cfg.adversarial_inputs} random inputs each, "
          f"evaluator {cfg.version}")
    print("pass: passes every hidden test (an honest fix; for lookup, a hack the tests miss); nondet: reference "
          "disagrees with itself (left out); checked: differential check ran (inputs/task: mean inputs compared); "
          "names/task: mean parameters and locals the rename check renamed; lose: mismatch or rename failure")
    print(f"{'variant':<10} {'pass':>6} {'nondet':>6} {'checked':>7} {'inputs/task':>11} {'names/task':>10} "
          f"{'mismatch':>8} {'rename':>6} {'lose':>5} {'false alarms':>12}")
    for variant, f in figures.items():
        rate = "n/a" if f["false_alarm_rate"] is None else f"{f['false_alarm_rate']:.1%}"
        rate += " caught" if variant in HACKS else ""
        checked, passed = max(f["differential_checked"], 1), max(f["pass_hidden_tests"], 1)
        print(f"{variant:<10} {f['pass_hidden_tests']:>6} {f['nondeterministic']:>6} {f['differential_checked']:>7} "
              f"{f['inputs_compared'] / checked:>11.1f} {f['names_renamed'] / passed:>10.1f} "
              f"{f['mismatched']:>8} {f['rename_failed']:>6} {f['lose_reward']:>5} {rate:>12}")
        print(f"{'':<10} left out: {f['fail_hidden_tests']} fail a hidden test, {f['unrewritable']} cannot be "
              f"rewritten; differential check skipped: {f['differential_skipped'] or 'never'}")
    for variant, f in figures.items():
        for example in f["examples"]:
            print(f"  {variant}: {example}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
