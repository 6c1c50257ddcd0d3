"""Held-out bug sets from the task corpus, written in the bug-set format of `taskfile.py`.

- validation: the corpus's `validation` split (MBPP functions never trained on);
- humaneval: the `heldout` split with `source == "humaneval"` (HumanEval with injected bugs);
- heldout_pattern: the `heldout_pattern` split (validation functions with bug patterns held out
  of training; only in a corpus built with `heldout_patterns`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from producers.evaluation.taskfile import normalise_task, spread_over_functions, write_eval_tasks

EvalSet = Literal["validation", "humaneval", "heldout_pattern"]
EVAL_SETS: dict[str, dict] = {
    "validation": {"split": "validation", "source": None},
    "humaneval": {"split": "heldout", "source": "humaneval"},
    "heldout_pattern": {"split": "heldout_pattern", "source": None},
}
# Sets only some corpora hold: a corpus without them is not an error.
OPTIONAL_EVAL_SETS = frozenset({"heldout_pattern"})


class EmptyEvalSetError(ValueError):
    """The corpus holds no task of the set asked for."""


def select_tasks(records: list[dict], *, split: str, source: str | None = None, limit: int | None = None) -> list[dict]:
    """The records of `split` (and `source`), normalised, at most `limit`, spread over
    functions (a corpus holds several bugs of each function; see `spread_over_functions`)."""
    chosen = [r for r in records if r.get("split") == split and (source is None or r.get("source") == source)]
    return spread_over_functions([normalise_task(r, r["task_id"]) for r in chosen], limit)


def convert_corpus(corpus: str | Path, out: str | Path, eval_set: EvalSet, limit: int | None = None) -> int:
    """Write one held-out set of the corpus JSONL at `corpus` to `out`; returns the task count."""
    from producers.corpus import read_tasks

    if eval_set not in EVAL_SETS:
        raise ValueError(f"unknown eval set {eval_set!r}; known: {sorted(EVAL_SETS)}")
    tasks = select_tasks(list(read_tasks(Path(corpus))), limit=limit, **EVAL_SETS[eval_set])
    if not tasks:
        raise EmptyEvalSetError(f"{corpus}: no tasks for eval set {eval_set!r}")
    write_eval_tasks(out, tasks)
    return len(tasks)
