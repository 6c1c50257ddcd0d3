import json
import statistics

import pytest

from streams.agents.processor import Output, PartitionReshaper, advantage_event_id, new_reshaper
from streams.settings import StreamSettings
from streams.reshaping.config import config_from_dict, load_preset
from streams.reshaping.pipeline import ReshapeState, normalise_groups, reshape_group, score_group
from tests.streams.helpers import feedback

CFG = load_preset("full")
SETTINGS = StreamSettings(group_timeout_ms=1000, metrics_window_ms=10_000)


def groups(n, size=4, t0=1_700_000_000_000):
    passes = [0.0, 0.25, 1.0, 0.5]
    return [[feedback(f"g{g}", i, size, passes[(g + i) % 4], created_at_ms=t0 + 1000 * g) for i in range(size)]
            for g in range(n)]


def test_advantages_equal_the_pure_core_group_by_group():
    proc = new_reshaper(CFG, SETTINGS, partition=0)
    state = ReshapeState()
    offset = 0
    for members in groups(5):
        out = None
        for fb in reversed(members):  # arrival order does not matter
            out = proc.on_feedback(fb, offset, log_ms=offset)
            offset += 1
        expected, state = reshape_group(members, state, CFG, step=state.groups)
        by_rid = {r["rollout_id"]: r for r in out.advantages}
        for rec in expected:
            got = by_rid[rec["rollout_id"]]
            assert got["advantage"] == rec["advantage"] and got["reward_enhanced"] == rec["reward_enhanced"]
            assert got["event_id"] == advantage_event_id(CFG.config_id, rec["rollout_id"])
    assert proc.state.to_dict() == state.to_dict()


def test_redelivered_offsets_do_not_count_twice():
    proc = new_reshaper(CFG, SETTINGS, partition=0)
    members = groups(1)[0]
    for off, fb in enumerate(members[:3]):
        proc.on_feedback(fb, off, off)
    snapshot = proc.to_dict()
    assert proc.on_feedback(members[0], 0, 5).advantages == []  # crash redelivery of offset 0
    assert proc.to_dict() == snapshot
    assert len(proc.on_feedback(members[3], 3, 6).advantages) == 4


def test_invalid_feedback_is_rejected_not_raised():
    proc = new_reshaper(CFG, SETTINGS, partition=0)
    bad = feedback("g", 0, 2, 1.0)
    bad["pass_fraction_runs"] = [1.5]
    out = proc.on_feedback(bad, 0, 0)
    assert out.advantages == [] and len(out.rejected) == 1 and proc.buffer.pending == {}


def test_metrics_window_closes_when_a_later_window_starts():
    proc = new_reshaper(CFG, SETTINGS, partition=3)
    t0 = 1_700_000_000_000 - 1_700_000_000_000 % 10_000
    a = [feedback("a", i, 2, float(i), created_at_ms=t0 + 5) for i in range(2)]
    b = [feedback("b", i, 2, 1.0, created_at_ms=t0 + 10_001) for i in range(2)]
    outs = [proc.on_feedback(fb, off, off) for off, fb in enumerate(a + b)]
    metrics = [m for o in outs for m in o.metrics]
    assert len(metrics) == 1 and metrics[0]["labels"]["window_start_ms"] == str(t0)
    assert metrics[0]["values"]["reward_raw_mean"] == pytest.approx(0.5)
    assert metrics[0]["values"]["zero_variance_share_raw"] == 0.0
    final = proc.drain().metrics  # b's window: both passed -> zero raw variance
    assert final[0]["values"]["zero_variance_share_raw"] == 1.0


def test_state_round_trip_continues_identically():
    a, b = new_reshaper(CFG, SETTINGS, 0), None
    stream = [fb for g in groups(6) for fb in g]
    outs_a, outs_b = [], []
    for off, fb in enumerate(stream):
        outs_a += a.on_feedback(fb, off, off).advantages
    b = new_reshaper(CFG, SETTINGS, 0)
    for off, fb in enumerate(stream):
        if off == 9:  # restore mid-group from the serialised state
            b = PartitionReshaper.from_dict(CFG, b.to_dict())
        outs_b += b.on_feedback(fb, off, off).advantages
    assert outs_a == outs_b


def test_state_of_another_config_is_refused():
    data = new_reshaper(CFG, SETTINGS, 0).to_dict()
    with pytest.raises(ValueError):
        PartitionReshaper.from_dict(load_preset("raw"), data)


def test_an_undecodable_record_counts_as_taken_in_and_moves_the_clock():
    proc = new_reshaper(CFG, SETTINGS, partition=0)  # group timeout 1000 ms
    proc.on_feedback(feedback("a", 0, 2, 1.0), 0, log_ms=0)
    out = proc.on_undecodable(1, log_ms=1500)  # the poison record's log time expires group a
    assert proc.applied_offset == 1 and proc.has_applied(1) and not proc.has_applied(2)
    assert [a["rollout_id"] for a in out.advantages] == ["a-r0"] and not out.advantages[0]["group_complete"]
    assert proc.on_undecodable(1, log_ms=9999).advantages == [] and proc.buffer.clock_ms == 1500


def test_pattern_window_must_be_whole_hops():
    with pytest.raises(ValueError):
        StreamSettings(pattern_window_s=100, pattern_hop_s=30)
    assert StreamSettings(pattern_window_s=120, pattern_hop_s=30).pattern_window_s == 120


def test_a_batch_collector_gathers_what_steps_return_one_by_one():
    """The replay passes one Output through a whole fetched batch; it must hold exactly what
    the step-by-step outputs hold, in the same order."""
    stream = [fb for members in groups(6) for fb in members]
    bad = feedback("g-bad", 0, 4, 1.0)
    bad["tree_edit_distance"] = float("nan")
    stream.insert(5, bad)
    one_by_one, batched = new_reshaper(CFG, SETTINGS, 0), new_reshaper(CFG, SETTINGS, 0)
    steps = [one_by_one.on_feedback(fb, off, log_ms=off) for off, fb in enumerate(stream)]
    steps.append(one_by_one.on_undecodable(len(stream), log_ms=10**9))
    collector = None
    for off, fb in enumerate(stream):
        collector = batched.on_feedback(fb, off, off, collector)
    assert batched.on_undecodable(len(stream), 10**9, collector) is collector
    for name in ("advantages", "metrics", "groups"):
        assert getattr(collector, name) == [x for step in steps for x in getattr(step, name)], name
    assert [(fb["rollout_id"], str(exc)) for fb, exc in collector.rejected] == \
        [(fb["rollout_id"], str(exc)) for step in steps for fb, exc in step.rejected]
    assert len(collector.rejected) == 1 and len(collector.advantages) == 24
    assert batched.to_dict() == one_by_one.to_dict()


def with_norm(**norm):
    """The full preset with other normalisation settings."""
    data = CFG.model_dump(mode="json")
    return config_from_dict({**data, "normalisation": {**data["normalisation"], **norm}})


BATCH = with_norm(mode="batch", batch_groups=3, batch_deadline_ms=5000, warmup_batches=1, warmup_min_count=0)


def feed(proc, members, offset, log_ms=None):
    """Members in order at consecutive offsets (log time = offset unless given); all outputs."""
    out = Output()
    for k, fb in enumerate(members):
        proc.on_feedback(fb, offset + k, offset + k if log_ms is None else log_ms + k, out)
    return out


def without_envelope(records):
    return [{k: v for k, v in r.items() if k not in ("event_id", "created_at_ms")} for r in records]


def test_batch_mode_normalises_b_consecutive_groups_of_the_partition_together():
    proc = new_reshaper(BATCH, SETTINGS, partition=0)
    gs = groups(4)
    outs = [feed(proc, members, 4 * k) for k, members in enumerate(gs)]
    assert [len(o.advantages) for o in outs] == [0, 0, 12, 0]  # released on the 3rd group
    # the pure core: three groups scored in log order, then normalised as one batch
    state, scored = ReshapeState(), []
    for members in gs[:3]:
        s, state = score_group(members, state, BATCH, step=state.groups)
        scored.append(s)
    expected, state = normalise_groups(scored, state, BATCH)
    assert without_envelope(outs[2].advantages) == [r for g in expected for r in g]
    batch = outs[2].advantages
    rewards = [r["reward_enhanced"] for r in batch]
    assert {(r["norm_centre"], r["norm_scale"], r["norm_mode"]) for r in batch} == {(batch[0]["norm_centre"],
                                                                                     batch[0]["norm_scale"], "batch")}
    assert all(r["warmup"] for r in batch)  # the first batch of warmup_batches 1: the global statistics
    assert batch[0]["norm_centre"] == pytest.approx(statistics.fmean(rewards))  # global == batch here: same rewards
    last = proc.drain().advantages  # the 4th group, a part-filled batch, after the warm-up: its own statistics
    mean, std = statistics.fmean(r["reward_enhanced"] for r in last), statistics.pstdev(
        r["reward_enhanced"] for r in last)
    assert not last[0]["warmup"] and last[0]["norm_centre"] == pytest.approx(mean)
    assert [r["reward_normalised"] for r in last] == pytest.approx(
        [(r["reward_enhanced"] - mean) / (std + BATCH.normalisation.epsilon) for r in last], rel=1e-9)
    assert proc.state.batches == 2


def test_a_part_filled_batch_is_released_by_the_partitions_log_time():
    cfg = with_norm(mode="batch", batch_groups=4, batch_deadline_ms=5000, warmup_min_count=0)
    proc = new_reshaper(cfg, SETTINGS, partition=0)
    a, b, c = groups(3)
    assert feed(proc, a, 0).advantages == []  # first group ready at log time 3: due at 5003
    assert feed(proc, b, 4).advantages == []
    assert proc.on_clock(5002).advantages == [] and proc.batches.due_ms == 5003
    released = proc.on_clock(5003).advantages
    assert [r["group_id"] for r in released] == ["g0"] * 4 + ["g1"] * 4
    assert len({r["norm_scale"] for r in released}) == 1
    # a record written after the deadline closes the batch before its own group joins a new one
    proc2 = new_reshaper(cfg, SETTINGS, partition=0)
    feed(proc2, a, 0)
    late = feed(proc2, c, 8, log_ms=6000)  # the first member of c moves the clock past 5003
    assert [r["group_id"] for r in late.advantages] == ["g0"] * 4
    assert [g.feedbacks[0]["group_id"] for g in proc2.batches.pending] == ["g2"]


@pytest.mark.parametrize("mode", ["batch", "running", "group"])
def test_state_round_trip_mid_batch_continues_identically(mode):
    cfg = with_norm(mode=mode, batch_groups=3, batch_deadline_ms=5000, warmup_batches=1, warmup_min_count=4)
    stream = [fb for g in groups(8) for fb in g]
    stream[5] = {**stream[5], "environment_failure": True}  # governance on the way
    straight = new_reshaper(cfg, SETTINGS, 0)
    expected = [r for off, fb in enumerate(stream) for r in straight.on_feedback(fb, off, off).advantages]
    expected += straight.drain().advantages
    restored, got = new_reshaper(cfg, SETTINGS, 0), []
    for off, fb in enumerate(stream):
        if off in (9, 14, 21):  # mid-group and mid-batch: through JSON, as the state table stores it
            saved = json.loads(json.dumps(restored.to_dict()))
            if mode == "batch":  # g0-g2 leave at offset 11; g3, g4 wait at 21
                assert len(saved["batches"]["pending"]) == {9: 2, 14: 0, 21: 2}[off]
            restored = PartitionReshaper.from_dict(cfg, saved)
        got += restored.on_feedback(fb, off, off).advantages
    got += restored.drain().advantages
    assert got == expected and len(got) == len(stream)
    assert [r["excluded"] for r in got if r["rollout_id"] == stream[5]["rollout_id"]] == [True]


def test_batch_mode_leaves_environment_failures_out_and_emits_an_uncompared_group_at_once():
    cfg = with_norm(mode="batch", batch_groups=2, batch_deadline_ms=10**9, warmup_min_count=0)
    proc = new_reshaper(cfg, SETTINGS, 0)
    a, b, c = groups(3, size=2)
    b = [{**b[0], "environment_failure": True}, b[1]]  # one comparable member of two: not compared
    assert feed(proc, a, 0).advantages == []
    alone = feed(proc, b, 2).advantages
    assert [r["excluded"] for r in alone] == [True, True] and [r["advantage"] for r in alone] == [0.0, 0.0]
    batch = feed(proc, c, 4).advantages  # a and c: the batch of two compared groups
    assert [r["group_id"] for r in batch] == ["g0", "g0", "g2", "g2"] and not any(r["excluded"] for r in batch)
    rewards = [r["reward_enhanced"] for r in batch]
    assert batch[0]["norm_centre"] == pytest.approx(statistics.fmean(rewards))
    assert proc.state.stats["reward_enhanced"].count == 4  # b's members entered no statistic
