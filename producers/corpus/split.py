"""Train/validation split by function: every bug of one function lands on the same side."""

from __future__ import annotations

import hashlib

TRAIN, VALIDATION, HELDOUT = "train", "validation", "heldout"


def unit_hash(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (stable across runs and machines, unlike hash())."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(function_id: str, source: str, seed: int, validation_fraction: float) -> str:
    """HumanEval is held out for evaluation; everything else is hashed into train/validation."""
    if source == "humaneval":
        return HELDOUT
    return VALIDATION if unit_hash(seed, function_id) < validation_fraction else TRAIN
