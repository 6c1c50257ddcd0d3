"""Feedback cost of the robustness checks: candidates/s of the whole evaluator (sandbox runs
and code signals) without them, with each, and with both, measured in one run.

    python benchmarks/robust_checks.py --n 40 --tasks 10 --rounds 3

Candidates cycle over MBPP tasks (every second one with a one-token bug), so each task gets
n/tasks rollouts, as a group would; the differential check's per-task plan and reference
probe are cleared before each configuration, so each pays them once per task and round.
"""

import argparse
import asyncio
import json
import time

from producers.corpus.mbpp import mbpp_path
from streams.feedback import EvaluatorConfig, aevaluate_rollout
from streams.feedback import differential, evaluate
from streams.sandbox import SandboxConfig, SandboxPool

MBPP = mbpp_path()  # $RESHAPER_DATA_DIR or the shared data folder beside the checkout
MUTATIONS = [(" < ", " <= "), (" > ", " >= "), (" + ", " - "), (" == ", " != ")]
CONFIGS = {
    "no robustness checks (baseline)": EvaluatorConfig(adversarial_inputs=0, rename_check=False),
    "differential check only": EvaluatorConfig(rename_check=False),
    "rename check only": EvaluatorConfig(adversarial_inputs=0),
    "both (default)": EvaluatorConfig(),
}


def load_tasks(count: int) -> list[dict]:
    tasks = []
    with MBPP.open() as lines:
        for line in lines:
            row = json.loads(line)
            code = row["code"].replace("\r\n", "\n")
            entry = row["test_list"][0].split("assert ", 1)[1].split("(", 1)[0].strip()
            if f"def {entry}(" not in code:
                continue
            tasks.append({"task_id": f"mbpp-{row['task_id']}", "entry_point": entry, "reference_code": code,
                          "buggy_code": code, "tests": row["test_list"], "test_setup_code": row["test_setup_code"],
                          "test_imports": [], "bug_pattern": "operator_swap", "difficulty": 0.5})
            if len(tasks) == count:
                return tasks
    return tasks


def rollouts(tasks: list[dict], n: int) -> list[tuple[dict, dict]]:
    pairs = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        code = task["reference_code"]
        if i % 2:
            old, new = next(((o, w) for o, w in MUTATIONS if o in code), ("", ""))
            code = code.replace(old, new, 1) if old else code
        pairs.append((task, {"rollout_id": f"r{i}", "group_id": f"g{i % len(tasks)}", "task_id": task["task_id"],
                             "sample_index": i, "group_size": n // len(tasks), "policy_version": 0,
                             "prompt_token_ids": [1], "completion_token_ids": [2], "behaviour_logprobs": [-0.5],
                             "completion_text": f"```python\n{code.rstrip()}\n```", "finish_reason": "stop",
                             "created_at_ms": 0, "sampling_seed": i}))
    return pairs


async def evaluate_all(pairs, pool, cfg, concurrency: int) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)

    async def one(task, rollout):
        async with gate:
            return await aevaluate_rollout(task, rollout, pool, cfg)

    return await asyncio.gather(*(one(t, r) for t, r in pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=80, help="candidates per configuration")
    parser.add_argument("--tasks", type=int, default=10, help="MBPP tasks they cycle over")
    parser.add_argument("--workers", type=int, default=2, help="sandbox workers")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all configurations")
    args = parser.parse_args()
    pairs = rollouts(load_tasks(args.tasks), args.n)
    print(f"{args.n} candidates over {args.tasks} MBPP tasks, {args.workers} sandbox workers")
    seconds = {label: 0.0 for label in CONFIGS}
    with SandboxPool(SandboxConfig(workers=args.workers)) as pool:
        asyncio.run(evaluate_all(pairs[: args.workers * 2], pool, CONFIGS["both (default)"], 4))  # warm-up
        # Rounds interleave the configurations, so load from elsewhere on the machine falls on all alike.
        for _ in range(args.rounds):
            for label, cfg in CONFIGS.items():
                differential._plan.cache_clear()
                evaluate._PROBES.clear()
                start = time.perf_counter()
                records = asyncio.run(evaluate_all(pairs, pool, cfg, 4 * args.workers))
                seconds[label] += time.perf_counter() - start
    rates = {label: args.n * args.rounds / s for label, s in seconds.items()}
    checked = sum(r["adversarial_checked"] > 0 for r in records)
    print(f"last round: differential ran on {checked}, rename on {sum(r['rename_checked'] for r in records)} "
          f"of {args.n} candidates")
    for label, rate in rates.items():
        print(f"{label:<34s} {rate:7.1f} candidates/s")
    base = rates["no robustness checks (baseline)"]
    for label, rate in rates.items():
        print(f"{label:<34s} {rate / base:5.2f}x of the baseline")


if __name__ == "__main__":
    main()
