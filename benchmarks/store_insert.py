"""Insert throughput of the chDB store on feedback-like rows.

    python benchmarks/store_insert.py --rows 100000 --batch 10000

Each row is a full Feedback record (5 test outcomes, 64 prompt and 64 completion
tokens); the figure includes the record -> row conversion the store does.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

from consumers.store.store import ChdbStore
from schemas.records import build_record


def feedback_like(i: int, rng: random.Random) -> dict:
    passed = [rng.random() < 0.6 for _ in range(5)]
    return build_record(
        "Feedback", event_id=f"{i:032x}", created_at_ms=1_700_000_000_000 + i, rollout_id=f"r{i}",
        group_id=f"g{i // 8}", task_id=f"t{i % 500}",
        bug_pattern=rng.choice(["off_by_one", "wrong_operator", "swapped_args", "missing_return"]),
        difficulty=rng.random(), sample_index=i % 8, group_size=8, policy_version=i // 10_000, evaluator_version="e1",
        repeats=1, tests_total=5, tests_passed=sum(passed), pass_fraction_runs=[sum(passed) / 5],
        test_outcomes=[{"index": k, "passed": ok, "error_kind": "none" if ok else "wrong_answer", "runtime_ms": 1.0}
                       for k, ok in enumerate(passed)],
        error_kind="none" if all(passed) else "wrong_answer", runtime_ms=12.5, tree_edit_distance=rng.random(),
        tree_edit_distance_raw=3, style_class="clean", hack_flags=["swallow"] if i % 20 == 0 else [],
        cyclomatic_complexity=2, adversarial_checked=16, prompt_token_ids=list(range(64)),
        completion_token_ids=list(range(64)), behaviour_logprobs=[-0.5] * 64, finish_reason="stop",
        completion_text="def f(x):\n    return x + 1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(0)
    records = [feedback_like(i, rng) for i in range(args.rows)]
    with tempfile.TemporaryDirectory() as path, ChdbStore(path) as store:
        store.init_schema()
        start = time.perf_counter()
        for start_row in range(0, len(records), args.batch):
            end_row = start_row + args.batch
            store.insert("feedback", records[start_row:end_row])
        elapsed = time.perf_counter() - start
        (count,) = store.query("SELECT count() FROM feedback FINAL").rows[0]
    print(f"{count} rows in {elapsed:.2f}s: {count / elapsed:,.0f} rows/s (batches of {args.batch})")


if __name__ == "__main__":
    main()
