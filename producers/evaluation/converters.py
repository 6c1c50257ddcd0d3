"""Held-out bug sets from the task corpus, written in the bug-set format of `taskfile.py`.

- validation: the corpus's `validation` split (MBPP functions never trained on);
- humaneval: the `heldout` split with `source == "humaneval"` (HumanEval with injected bugs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from producers.corpus.split import unit_hash
from producers.evaluation.taskfile import normalise_task, write_eval_tasks

EvalSet = Literal["validation", "humaneval"]
EVAL_SETS: dict[str, dict] = {
    "validation": {"split": "validation", "source": None},
    "humaneval": {"split": "heldout", "source": "humaneval"},
}


def select_tasks(records: list[dict], *, split: str, source: str | None = None, limit: int | None = None) -> list[dict]:
    """The records of `split` (and `source`), normalised, at most `limit`, spread over functions.

    A corpus holds several bugs of each function, so the first `limit` task ids would cover
    only a few functions. The order is one bug of every function (by function id), then a
    second of every function, and so on; which bug of a function comes first is fixed by a
    hash of its task id, so patterns vary. The order depends on nothing but the records: a
    limited set is the same for every arm and seed of an experiment."""
    chosen = [r for r in records if r.get("split") == split and (source is None or r.get("source") == source)]
    by_function: dict[str, list[dict]] = {}
    for r in sorted(chosen, key=lambda r: (unit_hash(r["task_id"]), r["task_id"])):
        by_function.setdefault(r.get("function_id", r["task_id"]), []).append(r)
    spread = sorted(((rank, fid, r) for fid, rs in by_function.items() for rank, r in enumerate(rs)),
                    key=lambda t: t[:2])
    return [normalise_task(r, r["task_id"]) for _, _, r in spread[:limit]]


def convert_corpus(corpus: str | Path, out: str | Path, eval_set: EvalSet, limit: int | None = None) -> int:
    """Write one held-out set of the corpus JSONL at `corpus` to `out`; returns the task count."""
    from producers.corpus import read_tasks

    if eval_set not in EVAL_SETS:
        raise ValueError(f"unknown eval set {eval_set!r}; known: {sorted(EVAL_SETS)}")
    tasks = select_tasks(list(read_tasks(Path(corpus))), limit=limit, **EVAL_SETS[eval_set])
    if not tasks:
        raise ValueError(f"{corpus}: no tasks for eval set {eval_set!r}")
    write_eval_tasks(out, tasks)
    return len(tasks)
