"""Splits: train/validation by function (every bug of one function lands on the same side),
HumanEval held out, and a held-out bug-pattern split.

A pattern held out of training (``CorpusBuildConfig.heldout_patterns``) is injected into
validation functions only, and those tasks get a split of their own, ``heldout_pattern``:
both the function and the bug pattern are unseen in training. Train functions get no bug of
a held-out pattern, so no training split ever holds one.
"""

from __future__ import annotations

import hashlib

TRAIN, VALIDATION, HELDOUT, HELDOUT_PATTERN = "train", "validation", "heldout", "heldout_pattern"


def unit_hash(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (stable across runs and machines, unlike hash())."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(function_id: str, source: str, seed: int, validation_fraction: float) -> str:
    """HumanEval is held out for evaluation; everything else is hashed into train/validation."""
    if source == "humaneval":
        return HELDOUT
    return VALIDATION if unit_hash(seed, function_id) < validation_fraction else TRAIN


def task_split(function_split: str, pattern: str, heldout_patterns: tuple[str, ...] | frozenset[str]) -> str | None:
    """The split of a bug of ``pattern`` in a function of ``function_split``; None when no
    such bug is built (a held-out pattern in a train function)."""
    if pattern not in heldout_patterns:
        return function_split
    if function_split == TRAIN:
        return None
    return HELDOUT_PATTERN if function_split == VALIDATION else function_split
