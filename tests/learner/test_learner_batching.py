"""Batching: whole groups, right-padding, token budget, stale samples."""

import pytest
import torch

from learner.batching import (
    BatchError,
    GroupAccumulator,
    collate,
    group_by_id,
    pack_groups,
    plan_step,
    split_stale,
)


def test_collate_right_pads_and_aligns_completions(make_record):
    a = make_record("g", 0, [5, 6, 7], [10, 11], 1.0, behaviour=[-0.1, -0.2])
    b = make_record(
        "g",
        1,
        [5],
        [20, 21, 22, 23],
        -1.0,
        behaviour=[-1, -2, -3, -4],
        finish_reason="length",
    )
    mb = collate([a, b])
    assert mb.input_ids.tolist() == [[5, 6, 7, 10, 11], [5, 20, 21, 22, 23]]
    assert mb.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]]
    assert mb.completion_start.tolist() == [3, 1]
    assert mb.completion_mask.tolist() == [
        [True, True, False, False],
        [True, True, True, True],
    ]
    assert torch.allclose(
        mb.behaviour_logprobs, torch.tensor([[-0.1, -0.2, 0, 0], [-1, -2, -3, -4]])
    )
    assert mb.advantages.tolist() == [1.0, -1.0]
    assert mb.truncated.tolist() == [False, True]


def test_collate_pads_short_rows(make_record):
    mb = collate(
        [
            make_record("g", 0, [5], [9], 0.0),
            make_record("g", 1, [5, 6, 7], [9, 9], 0.0),
        ]
    )
    assert mb.input_ids.tolist() == [[5, 9, 0, 0, 0], [5, 6, 7, 9, 9]]
    assert mb.attention_mask.tolist() == [[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]


def test_groups_keep_members_together_in_sample_order(make_record):
    records = [
        make_record("b", 1, [1], [2], 0),
        make_record("a", 0, [1], [2], 0),
        make_record("b", 0, [1], [3], 0),
    ]
    groups = group_by_id(records)
    assert [[r["group_id"] for r in g] for g in groups] == [["b", "b"], ["a"]]
    assert [r["sample_index"] for r in groups[0]] == [0, 1]


def test_token_budget_packs_whole_groups(make_record):
    # each row is 4 tokens long; groups of 2 rows cost 8 padded tokens
    groups = [[make_record(g, i, [1, 2], [3, 4], 0) for i in range(2)] for g in "abc"]
    packed = pack_groups(groups, token_budget=16)
    assert [[r["group_id"] for r in mb] for mb in packed] == [
        ["a", "a", "b", "b"],
        ["c", "c"],
    ]
    packed = pack_groups(groups, token_budget=8)
    assert len(packed) == 3


def test_padding_counts_against_the_budget(make_record):
    short = [make_record("s", i, [1], [2], 0) for i in range(2)]  # rows of 2
    long = [make_record("l", i, [1, 2, 3], [4, 5, 6], 0) for i in range(2)]  # rows of 6
    # together 4 rows x 6 = 24 > 20: not merged although the real tokens are 16
    assert len(pack_groups([short, long], token_budget=20)) == 2
    assert len(pack_groups([short, long], token_budget=24)) == 1


def test_oversized_group_split_into_rows_that_fit(make_record):
    group = [make_record("g", i, [1, 2], [3, 4, 5], 0) for i in range(5)]  # 5 rows of 5
    packed = pack_groups([group], token_budget=10)
    assert [len(mb) for mb in packed] == [2, 2, 1]
    assert all(len(mb) * 5 <= 10 for mb in packed)


def test_stale_samples_dropped_and_counted(make_record):
    records = [
        make_record("g", i, [1], [2], 0, policy_version=v)
        for i, v in enumerate([10, 9, 7, 6, 3])
    ]
    kept, dropped, lags = split_stale(records, learner_version=10, max_policy_lag=3)
    assert [r["policy_version"] for r in kept] == [10, 9, 7]
    assert dropped == 2
    assert lags == {0: 1, 1: 1, 3: 1, 4: 1, 7: 1}


def test_plan_step(make_record):
    records = [
        make_record("a", i, [1, 2], [3, 4, 5], 1.0 - 2 * i, policy_version=5)
        for i in range(2)
    ]
    records += [
        make_record("b", i, [1], [3], 0.5, policy_version=1) for i in range(2)
    ]  # lag 4 > 2
    plan = plan_step(
        records, learner_version=5, max_policy_lag=2, micro_batch_tokens=100
    )
    assert plan.num_groups == 1 and plan.num_samples == 2
    assert plan.dropped_stale == 2
    assert plan.num_completion_tokens == 6
    assert plan.lag_histogram == {0: 2, 4: 2}
    assert len(plan.micro_batches) == 1
    assert plan.micro_batches[0].advantages.tolist() == [1.0, -1.0]
    with pytest.raises(BatchError, match="at most 1"):
        plan_step(
            records,
            learner_version=5,
            max_policy_lag=9,
            micro_batch_tokens=100,
            max_groups=1,
        )


def test_bad_records_rejected(make_record):
    bad = make_record("g", 0, [1], [2, 3], 0, behaviour=[-1.0])
    with pytest.raises(BatchError, match="1 behaviour logprobs for 2"):
        collate([bad])
    with pytest.raises(BatchError, match="empty prompt"):
        collate([make_record("g", 0, [], [2], 0)])
    record = make_record("g", 0, [1], [2], 0)
    del record["advantage"]
    with pytest.raises(BatchError, match="advantage"):
        plan_step([record], 0, 1, 100)


def test_group_accumulator_releases_complete_groups(make_record):
    acc = GroupAccumulator(groups_per_step=2)
    assert acc.add(make_record("a", 0, [1], [2], 0, group_members=2)) is None
    assert (
        acc.add(make_record("b", 0, [1], [2], 0, group_members=1)) is None
    )  # b complete, a open
    ready = acc.add(make_record("a", 1, [1], [2], 0, group_members=2))
    assert [(r["group_id"], r["sample_index"]) for r in ready] == [
        ("b", 0),
        ("a", 0),
        ("a", 1),
    ]
    assert acc.pending_records == 0


def test_group_accumulator_pending_survives_a_restart(make_record):
    acc = GroupAccumulator(groups_per_step=2)
    acc.add(make_record("a", 0, [1], [2], 0, group_members=2))
    acc.add(make_record("b", 0, [1], [2], 0, group_members=1))
    held = acc.pending()
    assert [(r["group_id"], r["sample_index"]) for r in held] == [("a", 0), ("b", 0)]
    restarted = GroupAccumulator(groups_per_step=2)
    for r in held:
        assert restarted.add(r) is None
    ready = restarted.add(make_record("a", 1, [1], [2], 0, group_members=2))
    assert sorted((r["group_id"], r["sample_index"]) for r in ready) == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
    ]


def test_microbatch_to_device(make_record):
    mb = collate([make_record("g", 0, [1], [2], 0)]).to("cpu")
    assert mb.input_ids.dtype == torch.long and mb.padded_tokens == 2


def test_dynamic_sampling_drops_exactly_the_groups_without_comparison_signal(make_record):
    """The test is the reward before normalisation, never the advantage: equal non-zero
    advantages of a warm-up (equal rewards) carry no comparison; equal clipped advantages of
    different rewards, or all-fail members a layered reward tells apart, do."""
    acc = GroupAccumulator(groups_per_step=2, drop_uniform_groups=True)
    groups = {  # gid: [(advantage, reward_enhanced, excluded)]
        "flat_warmup": [(-0.8, 0.3, False)] * 3,
        "clipped": [(5.0, 3.0, False), (5.0, 4.0, False), (5.0, 5.0, False)],
        "flat_but_excluded": [(0.0, 0.5, False), (0.0, 0.5, False), (0.0, 0.0, True)],
        "all_fail_tiers": [(-1.2, 0.0, False), (0.0, 0.1, False), (1.2, 0.2, False)],
        "mixed": [(1.0, 1.0, False), (-1.0, 0.0, False), (0.0, 0.5, False)],
    }
    released = []
    for gid, members in groups.items():
        for i, (a, reward, excluded) in enumerate(members):
            ready = acc.add(make_record(gid, i, [1], [2], a, group_members=3, reward_enhanced=reward,
                                        excluded=excluded))
            if ready is not None:
                released.append(sorted({r["group_id"] for r in ready}))
    assert released == [["all_fail_tiers", "clipped"]]  # a full step of two groups with signal
    assert acc.dropped_groups == 2 and acc.uniform_groups == 2 and acc.excluded_groups == 0
    assert acc.pending_records == 3  # mixed waits for a partner
    keep_all = GroupAccumulator(groups_per_step=2)
    for i in range(3):
        ready = keep_all.add(make_record("flat", i, [1], [2], 0.0, group_members=3))
    assert ready is None and keep_all.dropped_groups == 0 and keep_all.pending_records == 3


def test_excluded_records_never_enter_a_step(make_record):
    acc = GroupAccumulator(groups_per_step=2)
    assert acc.add(make_record("a", 0, [1], [2], 0.7, group_members=3)) is None
    assert acc.add(make_record("a", 1, [1], [2], 0.0, group_members=3, excluded=True)) is None
    assert acc.add(make_record("a", 2, [1], [2], -0.7, group_members=3)) is None
    # a group whose every record is excluded is no learner group: it does not fill the step,
    # and it counts as dropped, so the generator samples a replacement
    assert acc.add(make_record("x", 0, [1], [2], 0.0, excluded=True)) is None
    assert acc.add(make_record("x", 1, [1], [2], 0.0, excluded=True)) is None
    assert acc.dropped_groups == 1 and acc.excluded_groups == 1 and acc.uniform_groups == 0
    held = acc.pending()
    restarted = GroupAccumulator(groups_per_step=2)  # a complete group keeps its excluded record
    for r in held:
        assert restarted.add(r) is None
    for a in (acc, restarted):
        a.add(make_record("b", 0, [1], [2], 1.0))
        ready = a.add(make_record("b", 1, [1], [2], -1.0))
        assert [(r["group_id"], r["sample_index"]) for r in ready] == [("a", 0), ("a", 2), ("b", 0), ("b", 1)]
    step = plan_step([make_record("c", 0, [1], [2], 1.0), make_record("c", 1, [1], [2], 0.0, excluded=True)],
                     learner_version=0, max_policy_lag=4, micro_batch_tokens=64)
    assert step.num_samples == 1 and step.micro_batches[0].advantages.tolist() == [1.0]


def test_a_spent_budget_flushes_the_waiting_groups_as_one_partial_step(make_record):
    acc = GroupAccumulator(groups_per_step=3, drop_uniform_groups=True)
    acc.add(make_record("a", 0, [1], [2], 1.0, group_members=2))
    acc.add(make_record("a", 1, [1], [2], -1.0, group_members=2))  # a: complete, kept
    acc.add(make_record("u", 0, [1], [2], 0.0, group_members=1))  # u: uniform, dropped
    acc.add(make_record("o", 0, [1], [2], 1.0, group_members=2))  # o: still open
    assert acc.groups_seen == 2  # a waiting, u dropped; o is not complete
    last = acc.flush()
    assert [(r["group_id"], r["sample_index"]) for r in last] == [("a", 0), ("a", 1)]
    assert (acc.released_groups, acc.groups_seen, acc.pending_records) == (1, 2, 1)
    assert acc.flush() == []


def test_copies_from_an_at_least_once_write_are_set_aside(make_record):
    """A worker that dies after emitting a group emits it again: the copies of a held member, of a
    group waiting for a step and of a released group are counted and never trained."""
    acc = GroupAccumulator(groups_per_step=1)
    a0, a1 = (make_record("a", i, [1], [2], adv, group_members=2) for i, adv in ((0, 0.5), (1, -0.5)))
    assert acc.add(a0) is None
    assert acc.add(dict(a0)) is None  # a copy of a held member
    ready = acc.add(a1)
    assert [(r["group_id"], r["sample_index"]) for r in ready] == [("a", 0), ("a", 1)]
    assert acc.add(dict(a0)) is None and acc.add(dict(a1)) is None  # the released group again
    assert acc.duplicate_records == 3 and acc.pending_records == 0 and acc.released_groups == 1
    waiting = GroupAccumulator(groups_per_step=2)
    waiting.add(make_record("b", 0, [1], [2], 0, group_members=1))
    assert waiting.add(make_record("b", 0, [1], [2], 0, group_members=1)) is None
    assert waiting.duplicate_records == 1 and waiting.groups_seen == 1


def test_closed_groups_survive_a_restart(make_record):
    def group(group_id, rewards):
        return [make_record(group_id, i, [1], [2], r, group_members=len(rewards)) for i, r in enumerate(rewards)]

    acc = GroupAccumulator(groups_per_step=1, drop_uniform_groups=True)
    for record in group("kept", [1.0, 0.0]) + group("flat", [0.0, 0.0]):  # released; dropped, no signal
        acc.add(record)
    assert acc.closed_groups == ["flat", "kept"] and acc.released_groups == 1 and acc.dropped_groups == 1
    restarted = GroupAccumulator(groups_per_step=1, drop_uniform_groups=True)
    restarted.restore_closed(acc.closed_groups)
    for record in group("kept", [1.0, 0.0]) + group("flat", [0.0, 0.0]):
        assert restarted.add(record) is None
    assert restarted.duplicate_records == 4 and restarted.pending_records == 0
    new = group("new", [1.0, 0.0])
    assert restarted.add(new[0]) is None and len(restarted.add(new[1])) == 2
