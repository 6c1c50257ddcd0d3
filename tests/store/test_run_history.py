"""A run's feedback is found through its generators' ids, whichever generator made it."""

from infra.compose.run_history import generator_id, run_feedback
from tests import factories
from tests.store.conftest import feedback, rollout


def test_run_feedback_holds_every_generator_of_the_run_and_no_other_run(chdb_store):
    makers = {0: generator_id("exp-a", 0), 1: generator_id("exp-a", 1), 2: generator_id("exp-b", 0),
              3: "exp-a-other-0"}
    rollouts = [factories.roundtrip("Rollout", {**rollout(n), "generator_id": makers[n % 4]}) for n in range(8)]
    chdb_store.insert("rollouts", rollouts)
    chdb_store.insert("feedback", [feedback(n) for n in range(8)])
    rows = run_feedback(chdb_store, "exp-a")
    assert [r["rollout_id"] for r in rows] == ["r0", "r1", "r4", "r5"]  # in event order
    assert all(r["created_at_ms"] == factories.T0 + int(r["rollout_id"][1:]) for r in rows)
    assert [r["rollout_id"] for r in run_feedback(chdb_store, "exp-b")] == ["r2", "r6"]
