"""Every syntax tree the feedback stage builds for a rollout is built on its one AST thread:
CPython 3.11 fails ``ast.parse`` run on two threads at once (python/cpython#106905), so the
event loop must never parse while the AST thread does. Real sandbox evaluation."""

import ast
import asyncio
import threading

import pytest

from streams.agents.feedback import feedback_value
from streams.feedback import aevaluate_rollout
from streams.sandbox import SandboxConfig, SandboxPool
from streams.settings import StreamSettings
from tests.feedback.test_evaluate import TASK, rollout
from tests.feedback.test_reviewed_hack import LATER, review, table_of


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=3)) as p:
        yield p


def test_feedback_parses_code_only_on_the_ast_thread(pool, monkeypatch):
    table = table_of(review("hack", 1_000))  # parsed here, before the recording starts
    threads: list[str] = []
    parse = ast.parse

    def recording_parse(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    # ast.literal_eval calls the module's parse too, so the sandbox's reply parsing is seen
    monkeypatch.setattr(ast, "parse", recording_parse)
    asyncio.run(feedback_value(TASK, rollout(f"```python\n{LATER}```"), aevaluate_rollout, lambda: pool,
                               StreamSettings(), table.get))
    assert len(threads) > 3  # extraction, signals, tests, replies, fingerprint
    assert {name.split("_")[0] for name in threads} == {"ast"}, threads
