"""A built corpus cached on disk, keyed by everything that decides its content."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, ContextManager

from producers.corpus.build import build_corpus
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.paths import REPO_ROOT
from producers.corpus.records import write_tasks
from producers.corpus.runner import TestRunner, sandbox_runner

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "corpus"
# Files that do not change what a build produces.
_NOT_IN_KEY = {"cli.py", "cache.py", "summary.py"}


def build_key(config: CorpusBuildConfig) -> str:
    """Hash of the config and of the corpus code (mutators, loaders, build logic)."""
    digest = hashlib.sha256(config.model_dump_json().encode())
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.name not in _NOT_IN_KEY:
            digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cached_build(config: CorpusBuildConfig,
                 open_runner: Callable[..., ContextManager[TestRunner]] = sandbox_runner,
                 cache_dir: Path = DEFAULT_CACHE_DIR, progress: bool = True) -> Path:
    """The path of the corpus JSONL for ``config``, building it first if not cached.

    ``open_runner(workers=, timeout_s=)`` opens the test runner (the sandbox by default).
    Next to the corpus, ``<key>.json`` records the build's counts and wall time.
    """
    key = build_key(config)
    corpus = cache_dir / f"{key}.jsonl"
    if corpus.is_file():
        return corpus
    cache_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open_runner(workers=config.eval_workers, timeout_s=config.eval_timeout_s) as runner:
        tasks, stats = build_corpus(config, runner, progress=progress)
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
