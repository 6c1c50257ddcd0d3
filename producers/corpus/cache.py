"""A built corpus cached on disk, keyed by everything that decides its content."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, ContextManager

from producers.corpus.build import BuildStats, iter_corpus
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.paths import REPO_ROOT
from producers.corpus.records import write_tasks
from producers.corpus.runner import TestRunner, sandbox_runner

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "corpus"
# Files that do not change what a build produces.
_NOT_IN_KEY = {"cli.py", "cache.py", "summary.py"}
# Outside the package, what else decides a record: the Task schema gives its fields, and the
# sandbox decides which bugs are kept and words the error context.
TASK_SCHEMA = REPO_ROOT / "schemas" / "task.avsc"
SANDBOX_DIR = REPO_ROOT / "streams" / "sandbox"


def key_files() -> list[Path]:
    """The files whose content decides what a build produces, in a fixed order."""
    package = [p for p in sorted(PACKAGE_DIR.rglob("*.py")) if p.name not in _NOT_IN_KEY]
    return package + [TASK_SCHEMA] + sorted(SANDBOX_DIR.glob("*.py"))


def build_key(config: CorpusBuildConfig, files: list[Path] | None = None) -> str:
    """Hash of the config and of the files that decide the corpus (``key_files()``: the corpus
    code, the Task schema, the sandbox), so a change of any of them is a new cache entry."""
    digest = hashlib.sha256(config.model_dump_json().encode())
    for path in key_files() if files is None else files:
        label = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path.name
        digest.update(str(label).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cached_corpus(config: CorpusBuildConfig, cache_dir: Path = DEFAULT_CACHE_DIR) -> Path | None:
    """The cached corpus JSONL of ``config``, or None when it has not been built."""
    corpus = cache_dir / f"{build_key(config)}.jsonl"
    return corpus if corpus.is_file() else None


def cached_build(config: CorpusBuildConfig,
                 open_runner: Callable[..., ContextManager[TestRunner]] = sandbox_runner,
                 cache_dir: Path = DEFAULT_CACHE_DIR, progress: bool = True,
                 on_tasks: Callable[[list[dict]], None] | None = None) -> Path:
    """The path of the corpus JSONL for ``config``, building it first if not cached.

    ``open_runner(workers=, timeout_s=)`` opens the test runner (the sandbox by default).
    While building, ``on_tasks`` gets each chunk of new tasks as soon as it is tested, so a
    caller can start on the first tasks; the cache entry appears only once the build is whole.
    Next to the corpus, ``<key>.json`` records the build's counts and wall time.
    """
    key = build_key(config)
    corpus = cache_dir / f"{key}.jsonl"
    if corpus.is_file():
        return corpus
    cache_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    stats, tasks = BuildStats(), []
    with open_runner(workers=config.eval_workers, timeout_s=config.eval_timeout_s) as runner:
        for chunk in iter_corpus(config, runner, stats, progress=progress):
            tasks += chunk
            if on_tasks is not None and chunk:
                on_tasks(chunk)
    report = {
        "config": config.model_dump(mode="json"),
        "build_seconds": round(time.monotonic() - started, 1),
        "functions": stats.functions,
        "references_failing": stats.references_failing,
        "unparseable": stats.unparseable,
        "outcomes": {f"{p}/{o}": n for (p, o), n in sorted(stats.outcomes.items())},
        "error_kinds": dict(sorted(stats.error_kinds.items())),
    }
    # Written under a temporary name first so an interrupted build leaves no cache entry.
    partial = corpus.with_suffix(".partial")
    write_tasks(partial, tasks)
    (cache_dir / f"{key}.json").write_text(json.dumps(report, indent=2) + "\n")
    partial.replace(corpus)
    return corpus
