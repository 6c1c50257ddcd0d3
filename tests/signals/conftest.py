"""Shared fixtures of the signal tests: the first MBPP reference solutions."""

import json

import pytest

from producers.corpus.mbpp import mbpp_path


@pytest.fixture(scope="session")
def mbpp_first_ten() -> list[dict]:
    with mbpp_path().open() as f:
        return [json.loads(next(f)) for _ in range(10)]
