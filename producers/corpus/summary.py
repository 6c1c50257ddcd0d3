"""Counting and showing tasks (for the CLI and build reports)."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Iterable

from producers.corpus.mutators import ALL_PATTERNS

SPLIT_ORDER = ("train", "validation", "heldout", "heldout_pattern")


def counts_by_pattern_and_split(tasks: Iterable[dict]) -> dict[str, dict[str, int]]:
    """{pattern: {split: count}} with every split present; known patterns in registry order."""
    counts = Counter((task["bug_pattern"], task["split"]) for task in tasks)
    rank = {name: i for i, name in enumerate(ALL_PATTERNS)}
    patterns = sorted({p for p, _ in counts}, key=lambda p: (rank.get(p, len(rank)), p))
    return {p: {s: counts[(p, s)] for s in SPLIT_ORDER} for p in patterns}


def bug_diff(task: dict) -> str:
    """Unified diff from the reference to the buggy code."""
    lines = difflib.unified_diff(
        task["reference_code"].splitlines(keepends=True),
        task["buggy_code"].splitlines(keepends=True),
        fromfile=f"{task['function_id']} (reference)",
        tofile=f"{task['task_id']} (buggy)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
