"""What a run folder (runs/<name>) holds for evaluation: its base model and its published policies."""

from __future__ import annotations

from pathlib import Path

import yaml


def final_policy(run_dir: Path) -> tuple[Path | None, int]:
    """The newest published policy of a run and its version (None, 0 when none was published)."""
    versions = sorted((run_dir / "policy").glob("v-*"))
    if not versions:
        return None, 0
    return versions[-1], int(versions[-1].name.split("-")[1])


def base_model_dir(run_dir: Path) -> Path:
    """The model every generator of the run started from (generator.yaml, or generator-0.yaml of several)."""
    config = run_dir / "generator.yaml"
    if not config.exists():
        config = run_dir / "generator-0.yaml"
    return Path(yaml.safe_load(config.read_text())["generator"]["model_dir"])
