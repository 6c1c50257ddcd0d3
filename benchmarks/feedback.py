"""Feedback throughput: candidates/s through (a) a fresh python per candidate,
(b) the sandbox pool, (c) the pool's floor (a warm sandboxed fork running an empty test),
the cost of the execution-path signal (coverage_cost), and (e) the evaluator itself (sandbox
runs, adversarial and rename checks, signals), as the feedback agent calls it, with `repeats`
1 and 3: the cost of repeated evaluation.

    python benchmarks/feedback.py --n 200 --evaluator-n 36
"""

import argparse
import asyncio
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from producers.corpus.mbpp import mbpp_path
from streams.feedback import EvaluatorConfig, aevaluate_rollout
from streams.sandbox import EvalRequest, SandboxConfig, SandboxPool
from streams.signals import executable_lines, line_coverage, uses_tracer
from streams.settings import StreamSettings

MBPP = mbpp_path()  # $RESHAPER_DATA_DIR or the shared data folder beside the checkout
TASK_IDS = [2, 3, 4, 6, 7, 8, 9, 11, 12, 14]
# Hand-picked one-token bugs; a candidate gets the first that applies to its code.
MUTATIONS = [
    (" < ", " <= "),
    (" > ", " >= "),
    (" + ", " - "),
    (" == ", " != "),
    ("return ", "return None or "),
]


def load_tasks(path: Path) -> list[dict]:
    rows = {}
    with path.open() as lines:
        for line in lines:
            row = json.loads(line)
            rows[row["task_id"]] = row
    return [rows[i] for i in TASK_IDS]


def make_candidates(n: int) -> list[EvalRequest]:
    """n candidates cycling over the tasks; every second one carries a bug."""
    tasks = load_tasks(MBPP)
    candidates = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        code = task["code"].replace("\r\n", "\n")
        if i % 2:
            old, new = next(((o, w) for o, w in MUTATIONS if o in code), ("", ""))
            code = code.replace(old, new, 1) if old else code
        candidates.append(
            EvalRequest(
                code=code, tests=task["test_list"], setup_code=task["test_setup_code"]
            )
        )
    return candidates


def evaluator_inputs(n: int) -> list[tuple[dict, dict]]:
    """n (task, rollout) pairs cycling over the tasks: the task's buggy code is its first
    mutation, and every second rollout repairs it (the others hand back the bug)."""
    pairs = []
    for i, request in enumerate(make_candidates(2 * n)[1::2]):  # the mutated ones
        row = load_tasks(MBPP)[i % len(TASK_IDS)]
        reference = row["code"].replace("\r\n", "\n")
        entry = re.search(r"^def (\w+)\(", reference, re.M).group(1)
        task = {"task_id": f"mbpp-{row['task_id']}", "entry_point": entry, "reference_code": reference,
                "buggy_code": request.code, "tests": list(request.tests), "test_setup_code": request.setup_code,
                "test_imports": [], "bug_pattern": "operator_swap", "difficulty": 0.5}
        rollout = {"rollout_id": f"r{i}", "group_id": f"g{i // 4}", "task_id": task["task_id"], "sample_index": i % 4,
                   "group_size": 4, "policy_version": 0, "prompt_token_ids": [1], "completion_token_ids": [2],
                   "behaviour_logprobs": [-0.5], "finish_reason": "stop", "created_at_ms": 0, "sampling_seed": i,
                   "completion_text": reference if i % 2 else request.code}
        pairs.append((task, rollout))
    return pairs


def run_evaluator(pairs: list[tuple[dict, dict]], pool: SandboxPool, cfg: EvaluatorConfig,
                  concurrency: int) -> list[dict]:
    """Every pair through the evaluator, `concurrency` at once (the feedback agent's eval_concurrency)."""
    async def all_of_them() -> list[dict]:
        gate = asyncio.Semaphore(concurrency)

        async def one(task: dict, rollout: dict) -> dict:
            async with gate:
                return await aevaluate_rollout(task, rollout, pool, cfg)

        return await asyncio.gather(*(one(t, r) for t, r in pairs))

    return asyncio.run(all_of_them())


def bench_evaluator(n: int, workers: int, rounds: int) -> None:
    """(e): repeats 1 and 3 take turns for `rounds` rounds; each keeps its best."""
    pairs = evaluator_inputs(n)
    concurrency = StreamSettings().eval_concurrency
    configs = {repeats: EvaluatorConfig(repeats=repeats) for repeats in (1, 3)}
    best: dict[int, float] = {}
    feedback: dict[int, list[dict]] = {}
    print(f"evaluator: {n} rollouts of {len(TASK_IDS)} MBPP tasks, {concurrency} at once, {workers} workers, "
          f"best of {rounds} rounds")
    with SandboxPool(SandboxConfig(workers=workers)) as pool:
        run_evaluator(pairs[: 2 * workers], pool, configs[1], concurrency)  # warm-up: signal libraries, zygotes
        for _ in range(rounds):
            for repeats, cfg in configs.items():
                start = time.perf_counter()
                feedback[repeats] = run_evaluator(pairs, pool, cfg, concurrency)
                best[repeats] = max(best.get(repeats, 0.0), n / (time.perf_counter() - start))
    for repeats, rate in best.items():
        print(f"{'(e) evaluator, repeats ' + str(repeats):<44s} {rate:8.1f} candidates/s")
    print(f"repeats 3 / repeats 1 = {best[3] / best[1]:.2f}x candidates/s")
    same = sum(a["pass_fraction_runs"] * 3 == b["pass_fraction_runs"] for a, b in zip(feedback[1], feedback[3]))
    print(f"the three runs agree with the single run on {same}/{n} rollouts; "
          f"{sum(f['environment_failure'] for f in feedback[3])} environment failures, "
          f"{sum(f['flaky'] for f in feedback[3])} flaky")


def naive_script(request: EvalRequest) -> str:
    """The whole candidate and its tests in one program, counting passes."""
    lines = [request.code, request.setup_code, "passed = 0"]
    for test in request.tests:
        lines += [
            "try:",
            f"    {test}",
            "    passed += 1",
            "except Exception:",
            "    pass",
        ]
    lines.append("print(passed)")
    return "\n".join(lines)


def run_naive(
    candidates: list[EvalRequest], timeout_s: float, flags: list[str]
) -> list[int]:
    passed = []
    for request in candidates:
        try:
            done = subprocess.run(
                [sys.executable, *flags, "-c", naive_script(request)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            passed.append(
                int(done.stdout.split()[-1])
                if done.returncode == 0 and done.stdout
                else 0
            )
        except subprocess.TimeoutExpired:
            passed.append(0)
    return passed


def timed(label: str, n: int, work) -> tuple[float, object]:
    start = time.perf_counter()
    out = work()
    rate = n / (time.perf_counter() - start)
    print(f"{label:<44s} {rate:8.1f} candidates/s")
    return rate, out


# A loop of about 30 000 line events in its first test: where tracing costs most.
LOOP_HEAVY = EvalRequest(
    code="def count(n):\n    total = 0\n    for i in range(n):\n        if i % 3:\n            total += i\n"
    "    return total\n",
    tests=["assert count(10000) == 33326667", "assert count(3) == 3"],
)


def evaluate_with_coverage(pool: SandboxPool, requests: list[EvalRequest], traced: bool) -> None:
    """The requests' sandbox runs; traced: with line tracing and the host's share of the
    execution-path signal (tracer check, executable lines, coverage)."""
    results = pool.evaluate_many([replace(r, trace_lines=traced) for r in requests])
    if traced:
        for request, result in zip(requests, results):
            if not uses_tracer(request.code):
                line_coverage(executable_lines(request.code), result.outcomes)


def coverage_cost(pool: SandboxPool, candidates: list[EvalRequest], rounds: int = 4, chunk: int = 10) -> None:
    """(d) Candidates/s without and with the execution-path signal, on the candidates and on
    LOOP_HEAVY copies. The two alternate chunk by chunk (in swapped order every other round),
    so both see the same load on a shared machine; each rate is over all its chunks."""
    for label, requests in (("candidates", candidates), ("loop-heavy", [LOOP_HEAVY] * max(len(candidates) // 4, 1))):
        spent = {False: 0.0, True: 0.0}
        for round_ in range(rounds):
            for i in range(0, len(requests), chunk):
                for traced in (False, True) if round_ % 2 == 0 else (True, False):
                    start = time.perf_counter()
                    evaluate_with_coverage(pool, requests[i : i + chunk], traced)
                    spent[traced] += time.perf_counter() - start
        plain, with_coverage = (rounds * len(requests) / spent[t] for t in (False, True))
        print(f"(d) {label}: {plain:.1f} candidates/s plain, {with_coverage:.1f} with line coverage; "
              f"with / plain = {with_coverage / plain:.2f}x ({len(requests)} candidates x {rounds} rounds)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="number of candidates; 0 skips (a) to (c)")
    parser.add_argument("--evaluator-n", type=int, default=36, help="rollouts through the evaluator (d); 0 skips it")
    parser.add_argument("--evaluator-rounds", type=int, default=2, help="turns of repeats 1 and 3 in (d)")
    parser.add_argument(
        "--workers", type=int, default=2, help="sandbox workers (and cores used)"
    )
    args = parser.parse_args()
    if args.n:
        bench_pool(args.n, args.workers)
    if args.evaluator_n:
        bench_evaluator(args.evaluator_n, args.workers, args.evaluator_rounds)


def bench_pool(n: int, workers: int) -> None:
    """(a) to (c)."""
    candidates = make_candidates(n)
    config = SandboxConfig(workers=workers)
    empty = [EvalRequest(code="", tests=["assert True"])] * n
    print(
        f"{n} candidates from {len(TASK_IDS)} MBPP tasks, {workers} workers"
    )

    naive_rate, naive_passed = timed(
        "(a) fresh `python -c` per candidate",
        n,
        lambda: run_naive(candidates, config.timeout_s, []),
    )
    # The same without site-packages: the fastest a fresh interpreter can be.
    bare_rate, _ = timed(
        "(a') fresh `python -I -S -c` per candidate",
        n,
        lambda: run_naive(candidates, config.timeout_s, ["-I", "-S"]),
    )
    with SandboxPool(config) as pool:
        pool.evaluate_many(candidates[: workers * 2])  # warm-up
        pool_rate, results = timed(
            "(b) sandbox pool", n, lambda: pool.evaluate_many(candidates)
        )
        floor_rate, _ = timed(
            "(c) floor: sandboxed fork, empty test",
            n,
            lambda: pool.evaluate_many(empty),
        )
        coverage_cost(pool, candidates)

    pool_passed = [r.tests_passed for r in results]
    agree = sum(a == b for a, b in zip(naive_passed, pool_passed))
    print(
        f"pool / naive = {pool_rate / naive_rate:.1f}x (goal >= 5x); "
        f"pool / bare interpreter = {pool_rate / bare_rate:.1f}x"
    )
    print(f"floor / pool = {floor_rate / pool_rate:.2f}x (goal <= 2x)")
    print(
        f"tests passed agree with the naive run on {agree}/{n} candidates; "
        f"pass fraction {sum(r.pass_fraction for r in results) / n:.3f}"
    )


if __name__ == "__main__":
    main()
