"""Fixtures of the corpus tests: the sandbox-backed test runner (skipped where it cannot run)."""

import pytest

from producers.corpus.runner import sandbox_runner


@pytest.fixture(scope="module")
def runner():
    from streams.sandbox import SandboxUnavailable

    try:
        with sandbox_runner(workers=2, timeout_s=5.0) as run:
            yield run
    except SandboxUnavailable as err:
        pytest.skip(f"sandbox unavailable: {err}")
