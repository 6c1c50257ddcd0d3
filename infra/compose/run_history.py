"""A run's own rows in its store: the topics are shared by every run on a broker, the
generator id is not, so a run's rows are found through it."""

from __future__ import annotations

from pathlib import Path

import yaml


def generator_prefix(run_name: str) -> str:
    """What the ids of every generator of a run start with."""
    return f"{run_name}-gen-"


def generator_id(run_name: str, index: int = 0) -> str:
    """The id a run's generator publishes under."""
    return f"{generator_prefix(run_name)}{index}"


def run_store(run_dir: Path):
    """The store the run recorded in run.yaml (its own chDB folder by default)."""
    from consumers.store import open_store

    recorded = yaml.safe_load((run_dir / "run.yaml").read_text())
    return open_store(recorded.get("store") or str(run_dir / "chdb"))


_RUN_FEEDBACK = ("SELECT * FROM feedback FINAL WHERE rollout_id IN (SELECT rollout_id FROM rollouts FINAL "
                 "WHERE startsWith(generator_id, {prefix:String})) ORDER BY event_time, event_id")


def run_feedback(store, run_name: str) -> list[dict]:
    """The feedback of every generator of a run (`generator_id(run_name, i)`, any i), in event
    order, with `created_at_ms` from the envelope's event time (what the reshaping reads)."""
    rows = store.query(_RUN_FEEDBACK, {"prefix": generator_prefix(run_name)}).as_dicts()
    for r in rows:
        r["created_at_ms"] = int(r["event_time"].timestamp() * 1000)
    return rows
