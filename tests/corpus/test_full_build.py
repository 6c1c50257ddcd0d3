"""The whole corpus, built once through the sandbox and cached under <repo>/.cache/corpus/
(keyed by the build config and the corpus code, so a re-run only reads the file)."""

import json
import random

import pytest

from producers.corpus.build import compiles
from producers.corpus.cache import cached_build
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.functions import SourceFunction
from producers.corpus.mutators import METHOD_PATTERNS
from producers.corpus.records import read_tasks
from producers.corpus.runner import TestJob, sandbox_runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus():
    from streams.sandbox import SandboxUnavailable

    try:
        path = cached_build(CorpusBuildConfig(), sandbox_runner, progress=False)
    except SandboxUnavailable as err:
        pytest.skip(f"sandbox unavailable: {err}")
    return list(read_tasks(path)), json.loads(path.with_suffix(".json").read_text())


@pytest.mark.parametrize("pattern", METHOD_PATTERNS)
def test_each_method_pattern_yields_at_least_50_mbpp_tasks(corpus, pattern):
    tasks, _ = corpus
    assert sum(t["bug_pattern"] == pattern and t["source"] == "mbpp" for t in tasks) >= 50


def test_no_function_on_both_sides_and_humaneval_held_out(corpus):
    tasks, _ = corpus
    splits: dict[str, set[str]] = {}
    for t in tasks:
        splits.setdefault(t["function_id"], set()).add(t["split"])
        assert (t["split"] == "heldout") == (t["source"] == "humaneval")
    assert all(len(s) == 1 for s in splits.values())
    assert len({t["task_id"] for t in tasks}) == len(tasks)


def test_buggy_code_compiles_except_missing_colon(corpus):
    tasks, _ = corpus
    for t in tasks:
        assert compiles(t["buggy_code"]) == (t["bug_pattern"] != "missing_colon"), t["task_id"]
        assert 0.0 <= t["difficulty"] <= 1.0


def test_a_sample_of_kept_bugs_fails_its_tests_again(corpus):
    tasks, _ = corpus
    sample = random.Random(0).sample([t for t in tasks if t["bug_pattern"] != "missing_colon"], 40)
    jobs = [TestJob(t["buggy_code"], SourceFunction(
        function_id=t["function_id"], source=t["source"], entry_point=t["entry_point"],
        reference_code=t["reference_code"], tests=tuple(t["tests"]),
        test_setup_code=t["test_setup_code"], test_imports=tuple(t["test_imports"])))
        for t in sample]
    with sandbox_runner() as run:
        outcomes = run(jobs)
    assert not any(o.passed_all for o in outcomes)
