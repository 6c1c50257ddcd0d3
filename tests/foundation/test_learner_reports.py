"""How a run's report reads the learner's step reports: one row per step it took."""

from infra.compose.report import learner_reports


def trained(n: int, loss: float = 0.1) -> dict:
    return {"num_samples": float(n), "dropped_stale": 0.0, "loss/loss": loss}


def all_stale(n: int) -> dict:
    return {"num_samples": 0.0, "dropped_stale": float(n)}


def test_a_batch_that_was_all_stale_keeps_its_own_row_after_the_step_it_followed():
    # the learner took step 12, then a batch of 16 stale records left its step count at 12
    reports = [(11, trained(16)), (12, trained(16)), (12, all_stale(16)), (13, trained(16))]
    kept = learner_reports(reports)
    assert [(step, v["num_samples"]) for step, v in kept] == [(11, 16.0), (12, 16.0), (12, 0.0), (13, 16.0)]
    assert sum(v["num_samples"] for _, v in kept) == 48  # what was trained: none of it lost
    assert sum(v["dropped_stale"] for _, v in kept) == 16


def test_a_step_redone_after_a_crash_keeps_its_last_report():
    reports = [(1, trained(16, loss=0.5)), (2, trained(16, loss=0.7)), (2, trained(16, loss=0.2)), (3, trained(8))]
    kept = learner_reports(reports)
    assert [step for step, _ in kept] == [1, 2, 3]
    assert kept[1][1]["loss/loss"] == 0.2
    assert sum(v["num_samples"] for _, v in kept) == 40
