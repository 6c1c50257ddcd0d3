"""Which runs of an experiment are done, which to resume and which to (re)start: pure, no I/O.

The unit of an experiment is one run (an arm and a seed), plus the base model's evaluation.
A unit is `complete` once its results folder holds a manifest whose every file is there with
its recorded digest; that folder is committed, so a unit done on one machine counts as done on
any machine holding the repository. What is not complete is decided from the run folder
(ignored by git, so present only where the run trained):

    complete  results manifest intact                       -> skip
    finish    trained to the end (report, not interrupted)  -> evaluate and write the results
    resume    run folder with its recorded config           -> continue training, then finish
    start     no run folder (never started, or gone)        -> train from scratch, then finish
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

BASE = "base"
MANIFEST = "manifest.json"

Action = Literal["complete", "finish", "resume", "start"]


@dataclass(frozen=True)
class Unit:
    """One run (arm, seed), or the base model's evaluation (arm BASE) for one corpus seed."""

    arm: str
    seed: int

    @property
    def is_base(self) -> bool:
        return self.arm == BASE


@dataclass(frozen=True)
class RunFolder:
    """What the run folder of a unit shows (absent folder: both False)."""

    has_config: bool  # run.yaml: the orchestrator can resume it
    trained: bool  # report/summary.json of a run that was not interrupted


def order_units(arms: list[str], seeds: list[int], base_seeds: list[int]) -> list[Unit]:
    """The base evaluations first (greedy is deterministic: once per corpus seed), then seed by
    seed across arms, so a cut experiment has whole seeds of every arm rather than every seed
    of a few arms."""
    return [Unit(BASE, s) for s in base_seeds] + [Unit(arm, seed) for seed in seeds for arm in arms]


def decide(manifest_intact: bool, folder: RunFolder, is_base: bool = False) -> Action:
    """What a unit needs, from its committed results and its run folder."""
    if manifest_intact:
        return "complete"
    if is_base:  # nothing to train: evaluate the base model
        return "finish"
    if folder.trained:
        return "finish"
    return "resume" if folder.has_config else "start"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_of(files: dict[str, bytes]) -> dict[str, str]:
    """Relative path -> sha256 of every results file, in path order."""
    return {name: digest(files[name]) for name in sorted(files)}


def manifest_intact(manifest_text: str | None, files: dict[str, bytes]) -> bool:
    """True when the manifest parses, names at least one file, and every named file is present
    with its digest (a results folder cut while it was written has no manifest yet: the
    manifest is written last)."""
    if manifest_text is None:
        return False
    try:
        recorded = json.loads(manifest_text)
    except ValueError:
        return False
    if not isinstance(recorded, dict) or not recorded:
        return False
    return all(name in files and digest(files[name]) == sha for name, sha in recorded.items())


def read_folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but the manifest, by path relative to it (the I/O edge of
    `manifest_intact`)."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


def folder_manifest_intact(folder: Path) -> bool:
    path = folder / MANIFEST
    return manifest_intact(path.read_text() if path.exists() else None, read_folder_files(folder))


def run_folder_state(run_dir: Path) -> RunFolder:
    summary = run_dir / "report" / "summary.json"
    trained = False
    if summary.exists():
        try:
            trained = not json.loads(summary.read_text()).get("interrupted", True)
        except ValueError:
            trained = False
    return RunFolder(has_config=(run_dir / "run.yaml").exists(), trained=trained)
