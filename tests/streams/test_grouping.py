from streams.agents.grouping import GroupBuffer
from tests.streams.helpers import feedback


def test_group_leaves_when_its_last_member_arrives():
    buf = GroupBuffer(timeout_ms=1000)
    assert buf.add(feedback("a", 0, 2, 1.0), log_ms=10) == []
    ready = buf.add(feedback("a", 1, 2, 0.0), log_ms=20)
    assert [(g.group_id, g.complete, [m["sample_index"] for m in g.members]) for g in ready] == [("a", True, [0, 1])]
    assert buf.pending == {}


def test_timeout_releases_incomplete_groups_in_deadline_order_before_the_new_record():
    buf = GroupBuffer(timeout_ms=100)
    buf.add(feedback("a", 0, 3, 1.0), log_ms=0)      # deadline 100
    buf.add(feedback("b", 0, 3, 1.0), log_ms=50)     # deadline 150
    buf.add(feedback("a", 1, 3, 0.0), log_ms=60)
    ready = buf.add(feedback("c", 0, 1, 1.0), log_ms=160)  # clock 160 passes both deadlines
    assert [(g.group_id, g.complete, len(g.members)) for g in ready] == [("a", False, 2), ("b", False, 1), ("c", True, 1)]


def test_clock_never_goes_back_and_advance_expires():
    buf = GroupBuffer(timeout_ms=100)
    buf.add(feedback("a", 0, 2, 1.0), log_ms=500)
    assert buf.advance(400) == [] and buf.clock_ms == 500
    assert [g.group_id for g in buf.advance(600)] == ["a"]


def test_stragglers_and_duplicates_are_dropped_and_counted():
    buf = GroupBuffer(timeout_ms=100)
    first = feedback("a", 0, 2, 1.0)
    buf.add(first, log_ms=0)
    buf.add(first, log_ms=1)  # redelivered duplicate
    assert buf.dropped_duplicate == 1
    buf.advance(200)
    assert buf.add(feedback("a", 1, 2, 1.0), log_ms=201) == []  # after its group left
    assert buf.dropped_late == 1 and buf.pending == {}


def test_round_trip_keeps_everything():
    buf = GroupBuffer(timeout_ms=100, recent_limit=2)
    for g in "abc":
        buf.add(feedback(g, 0, 1, 1.0), log_ms=5)
    buf.add(feedback("d", 0, 2, 0.5), log_ms=7)
    again = GroupBuffer.from_dict(buf.to_dict())
    assert again.to_dict() == buf.to_dict()
    assert list(again.recent) == ["b", "c"]  # bounded memory of emitted groups


def test_a_snapshot_does_not_follow_later_arrivals():
    buf = GroupBuffer(timeout_ms=100)
    buf.add(feedback("a", 0, 3, 1.0), log_ms=0)
    snapshot = buf.to_dict()
    buf.add(feedback("a", 1, 3, 0.0), log_ms=1)
    assert [len(p["members"]) for p in snapshot["pending"]] == [1]


def test_a_restored_buffer_still_drops_duplicates_and_stragglers():
    buf = GroupBuffer(timeout_ms=100)
    buf.add(feedback("a", 0, 2, 1.0), log_ms=0)
    buf.add(feedback("b", 0, 1, 1.0), log_ms=0)  # b complete, remembered as emitted
    again = GroupBuffer.from_dict(buf.to_dict())
    assert again.add(feedback("a", 0, 2, 1.0), log_ms=1) == [] and again.dropped_duplicate == 1
    assert again.add(feedback("b", 1, 2, 1.0), log_ms=1) == [] and again.dropped_late == 1
    assert [g.group_id for g in again.add(feedback("a", 1, 2, 0.0), log_ms=2)] == ["a"]
