"""The fault tests' audit of how the learner read its topic, on made-up checkpoints: an unbroken
read passes, and a skipped record, a group trained twice, offsets that went back or commits
that lag the checkpoint each fail it. (No services: the fault tests run it on real runs.)"""

import json

from infra.platform.kafka_io import ConsumedEvent
from learner.service import CLOSED_KEY, DROPPED_KEY, PENDING_KEY, RELEASED_KEY
from tests.e2e.stored import learner_read_audit, read_without_gaps

TOPIC = "advantages.test"


def event(partition: int, offset: int, group: str, member: int) -> ConsumedEvent:
    record = {"rollout_id": f"{group}-{member}", "group_id": group}
    return ConsumedEvent(TOPIC, partition, offset, None, 0, "Advantage", record)


# two partitions; groups a, b, c of two members each, and d still arriving
EVENTS = [event(0, 0, "a", 0), event(0, 1, "a", 1), event(0, 2, "c", 0), event(0, 3, "c", 1),
          event(1, 0, "b", 0), event(1, 1, "b", 1), event(1, 2, "d", 0), event(1, 3, "d", 1)]


def checkpoint(root, step: int, offsets: dict[int, int], closed: list[str], pending: list[str], released: int,
               dropped: int = 0) -> None:
    path = root / f"step-{step:08d}"
    path.mkdir(parents=True)
    (path / "state.json").write_text(json.dumps({"step": step, "policy_version": step,
                                                 "offsets": {TOPIC: {str(p): o for p, o in offsets.items()}}}))
    pending_records = [e.record for e in EVENTS if e.record["rollout_id"] in pending]
    (path / "extra.json").write_text(json.dumps({CLOSED_KEY: closed, PENDING_KEY: pending_records,
                                                 RELEASED_KEY: released, DROPPED_KEY: dropped}))


def unbroken(root) -> None:
    checkpoint(root, 1, {0: 2, 1: 1}, ["a"], ["b-0"], released=1)
    checkpoint(root, 2, {0: 4, 1: 3}, ["a", "b", "c"], ["d-0"], released=2, dropped=1)


def test_an_unbroken_read_passes(tmp_path):
    unbroken(tmp_path)
    audit = learner_read_audit(tmp_path, EVENTS, committed={0: 4, 1: 3})
    assert read_without_gaps(audit), audit
    assert audit["records_read"] == 7 and audit["closed_groups"] == 3


def test_a_record_read_past_but_never_taken_fails(tmp_path):
    checkpoint(tmp_path, 1, {0: 4, 1: 3}, ["a", "b", "c"], [], released=3)  # d-0 below the offset, nowhere
    audit = learner_read_audit(tmp_path, EVENTS, committed={0: 4, 1: 3})
    assert audit["read_but_unaccounted"] == 1 and not read_without_gaps(audit)


def test_a_group_trained_twice_fails(tmp_path):
    checkpoint(tmp_path, 1, {0: 4, 1: 3}, ["a", "b", "c"], ["d-0"], released=4)
    assert not read_without_gaps(learner_read_audit(tmp_path, EVENTS, committed={0: 4, 1: 3}))


def test_a_closed_group_beyond_the_offsets_fails(tmp_path):
    checkpoint(tmp_path, 1, {0: 2, 1: 3}, ["a", "b", "c"], ["d-0"], released=3)  # c lies at 0:2-3
    audit = learner_read_audit(tmp_path, EVENTS, committed={0: 2, 1: 3})
    assert audit["closed_beyond_position"] == 2 and not read_without_gaps(audit)


def test_offsets_that_go_back_or_commits_that_lag_fail(tmp_path):
    unbroken(tmp_path / "lag")
    assert not read_without_gaps(learner_read_audit(tmp_path / "lag", EVENTS, committed={0: 2, 1: 1}))
    checkpoint(tmp_path / "back", 1, {0: 4, 1: 3}, ["a", "b", "c"], ["d-0"], released=3)
    checkpoint(tmp_path / "back", 2, {0: 4, 1: 1}, ["a", "b", "c"], ["d-0"], released=3)
    audit = learner_read_audit(tmp_path / "back", EVENTS, committed={0: 4, 1: 1})
    assert audit["offsets_gone_back"] == 1 and not read_without_gaps(audit)
