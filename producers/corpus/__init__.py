"""The task corpus: correct functions (MBPP; HumanEval held out) with injected bugs.

    from producers.corpus import CorpusBuildConfig, build_corpus, sandbox_runner, write_tasks
    with sandbox_runner() as run:
        tasks, stats = build_corpus(CorpusBuildConfig(seed=0), run)
    write_tasks("tasks.jsonl", tasks)
"""

from producers.corpus.build import BuildStats, build_corpus, load_functions
from producers.corpus.cache import build_key, cached_build, cached_corpus
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.difficulty import difficulty
from producers.corpus.functions import CorpusDataError, SourceFunction
from producers.corpus.humaneval import load_humaneval
from producers.corpus.mbpp import load_mbpp
from producers.corpus.mutators import ALL_PATTERNS, METHOD_PATTERNS, MUTATORS, get_mutator
from producers.corpus.paths import data_dir
from producers.corpus.records import TASK_FIELDS, TaskRecordError, make_task, read_tasks, write_tasks
from producers.corpus.runner import TestJob, TestOutcome, TestRunner, sandbox_runner
from producers.corpus.split import split_of

__all__ = [
    "ALL_PATTERNS", "METHOD_PATTERNS", "MUTATORS", "TASK_FIELDS", "BuildStats", "CorpusBuildConfig",
    "CorpusDataError", "SourceFunction", "TaskRecordError", "TestJob", "TestOutcome", "TestRunner",
    "build_corpus", "build_key", "cached_build", "cached_corpus", "data_dir", "difficulty", "get_mutator",
    "load_functions", "load_humaneval", "load_mbpp", "make_task", "read_tasks", "sandbox_runner",
    "split_of", "write_tasks",
]
