"""Shared fixtures: the converted SmolLM2 folder (cached under .cache/models), a tiny Llama
with its tokenizer, and (buggy -> fixed) pairs made from MBPP functions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producers.corpus.mbpp import mbpp_path
from producers.generator.model_store import build_tiny_model, cached_smollm2

# (original, replacement) tried in order; the first one present in a function makes its bug.
BUG_SWAPS = [(" + ", " - "), (" < ", " <= "), (" > ", " >= "), (" == ", " != "), ("range(", "range(1 + ")]


def inject_trivial_bug(code: str) -> str | None:
    for old, new in BUG_SWAPS:
        if old in code:
            return code.replace(old, new, 1)
    return None


def mbpp_pairs(limit: int) -> list[dict]:
    """Up to `limit` tasks {buggy_code, reference_code, split} from MBPP (CRLF normalised)."""
    tasks = []
    for line in mbpp_path().read_text().splitlines():
        code = json.loads(line)["code"].replace("\r\n", "\n")
        buggy = inject_trivial_bug(code)
        if buggy is not None:
            tasks.append({"buggy_code": buggy, "reference_code": code, "split": "train"})
        if len(tasks) == limit:
            break
    return tasks


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    return cached_smollm2()


@pytest.fixture(scope="session")
def tokenizer(smollm2_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


@pytest.fixture(scope="session")
def tiny_dir(smollm2_dir, tmp_path_factory) -> Path:
    # A wide init makes the random model's next-token distributions peaked, so top-k/top-p
    # truncation actually removes mass and seeds visibly change the samples.
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), smollm2_dir, initializer_range=0.5)


@pytest.fixture(scope="session")
def make_mbpp_tasks():
    """mbpp_pairs as a fixture, so test modules need not import this conftest."""
    return mbpp_pairs
