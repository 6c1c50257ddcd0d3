"""Shared fixtures of the signal tests: the first MBPP reference solutions."""

import json
from pathlib import Path

import pytest

MBPP = Path("/work/shared/data/mbpp/mbpp.jsonl")


@pytest.fixture(scope="session")
def mbpp_first_ten() -> list[dict]:
    if not MBPP.exists():
        pytest.skip("MBPP data not available")
    with MBPP.open() as f:
        return [json.loads(next(f)) for _ in range(10)]
