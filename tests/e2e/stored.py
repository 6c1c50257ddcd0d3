"""What a finished run left in its store, for the fault tests."""

from pathlib import Path

from consumers.store import open_store


def stored_counts(run_dir: Path, config_id: str) -> tuple[dict[str, tuple[int, int]], int]:
    """(rows, distinct rollout ids) of rollouts, feedback and the run's advantages; dead letters."""
    counts = {}
    with open_store(str(run_dir / "chdb")) as store:
        for table, where in (("rollouts", ""), ("feedback", ""), ("advantages", f"WHERE config_id = '{config_id}'")):
            plain, distinct = store.query(f"SELECT count(), uniqExact(rollout_id) FROM {table} {where}").rows[0]
            counts[table] = (plain, distinct)
        dead = store.query("SELECT count() FROM dead_letters").rows[0][0]
    return counts, dead
