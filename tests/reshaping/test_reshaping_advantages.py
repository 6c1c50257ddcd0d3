import math

import pytest

from streams.reshaping.advantages import (
    amplify,
    clip,
    focus,
    group_stats,
    normalise,
    normalise_batch,
    transform,
)
from streams.reshaping.config import NormalisationConfig, TransformConfig
from streams.reshaping.stats import RunningStats

EPS = 1e-6
SQRT_0125 = math.sqrt(0.125)  # population std of [0, 0.5, 1, 0.5]
NO_WARMUP = dict(warmup_min_std=0.0, warmup_min_count=0, epsilon=EPS)


def test_group_normalisation_by_hand():
    assert group_stats([0.0, 0.5, 1.0, 0.5]) == (0.5, SQRT_0125)
    cfg = NormalisationConfig(mode="group", **NO_WARMUP)
    rewards = [0.0, 0.5, 1.0, 0.5]
    a = list(normalise(rewards, RunningStats().update_many(rewards), baseline=0.0, cfg=cfg).values)
    expected = [-0.5 / (SQRT_0125 + EPS), 0.0, 0.5 / (SQRT_0125 + EPS), 0.0]
    assert a == pytest.approx(expected, rel=1e-15)
    assert a[2] == pytest.approx(math.sqrt(2), rel=1e-5)


def test_zero_variance_group_gives_zero_without_warmup():
    cfg = NormalisationConfig(mode="group", **NO_WARMUP)
    glob = RunningStats().update_many([0.0, 1.0, 0.7, 0.7, 0.7, 0.7])
    n = normalise([0.7] * 4, glob, baseline=0.3, cfg=cfg)
    assert n.values == (0.0, 0.0, 0.0, 0.0)
    assert not n.warmup and n.group_std == 0.0


def test_zero_variance_group_under_global_warmup_uses_global_stats():
    cfg = NormalisationConfig(mode="group", warmup_mode="global", warmup_batches=1, warmup_min_std=0.05,
                              warmup_min_count=0, epsilon=EPS)
    glob = RunningStats().update_many([0.0, 1.0, 0.5, 0.5, 0.5, 0.5])  # mean 0.5, var 1/6 * 0.5 = 1/12
    assert glob.std == pytest.approx(math.sqrt(1 / 12))
    n = normalise([0.5, 0.5, 0.5, 0.5], glob, baseline=0.0, cfg=cfg)
    assert n.warmup
    assert n.values == pytest.approx([0.0] * 4, abs=1e-15)  # the group sits at the global mean
    glob2 = RunningStats().update_many([0.0, 0.0, 1.0, 1.0])  # mean 0.5, std 0.5
    n2 = normalise([1.0] * 4, glob2, baseline=0.0, cfg=cfg)
    assert n2.values == pytest.approx([0.5 / (0.5 + EPS)] * 4, rel=1e-15)


def test_all_equal_first_group_is_zero_even_in_global_warmup():
    cfg = NormalisationConfig(mode="group", warmup_mode="global", warmup_min_count=100, epsilon=EPS)
    glob = RunningStats().update_many([0.25] * 4)  # the group itself: std 0
    n = normalise([0.25] * 4, glob, baseline=0.25, cfg=cfg)
    assert n.warmup and n.values == (0.0,) * 4


def test_group_of_one():
    cfg = NormalisationConfig(mode="group", **NO_WARMUP)
    n = normalise([0.8], RunningStats().update(0.8), baseline=0.8, cfg=cfg)
    assert n.values == (0.0,) and n.group_mean == 0.8 and n.group_std == 0.0


def test_warmup_switch_on_group_std():
    cfg = NormalisationConfig(mode="group", warmup_mode="global", warmup_batches=1, warmup_min_std=0.1,
                              warmup_min_count=0, epsilon=EPS)
    glob = RunningStats().update_many([0.0, 0.0, 1.0, 1.0])  # mean 0.5, std 0.5
    tiny = normalise([0.0, 0.1], glob, baseline=0.0, cfg=cfg)  # group std 0.05 < 0.1
    assert tiny.warmup
    assert tiny.values == pytest.approx([-0.5 / (0.5 + EPS), -0.4 / (0.5 + EPS)], rel=1e-12)
    wide = normalise([0.0, 0.4], glob, baseline=0.0, cfg=cfg)  # group std 0.2 >= 0.1
    assert not wide.warmup
    assert wide.values == pytest.approx([-0.2 / (0.2 + EPS), 0.2 / (0.2 + EPS)], rel=1e-12)
    at_threshold = normalise([0.0, 0.2], glob, baseline=0.0, cfg=cfg)  # std exactly 0.1: no warm-up
    assert not at_threshold.warmup


def test_warmup_switch_on_count():
    cfg = NormalisationConfig(mode="group", warmup_mode="global", warmup_min_std=0.0, warmup_min_count=10, epsilon=EPS)
    rewards = [0.0, 1.0]
    young = RunningStats().update_many([0.0] * 7 + [1.0] * 2)  # 9 seen
    grown = young.update(1.0)  # 10 seen: mean 0.3, std sqrt(0.21)
    assert normalise(rewards, young, 0.0, cfg).warmup
    n = normalise(rewards, grown, 0.0, cfg)
    assert not n.warmup
    assert n.values == pytest.approx([-0.5 / (0.5 + EPS), 0.5 / (0.5 + EPS)], rel=1e-12)
    y = normalise(rewards, young, 0.0, cfg)
    assert y.values == pytest.approx([(r - young.mean) / (young.std + EPS) for r in rewards], rel=1e-12)


def test_fixed_warmup_scale():
    cfg = NormalisationConfig(
        mode="group", warmup_mode="fixed", fixed_scale=0.5, warmup_batches=1, warmup_min_std=0.1, warmup_min_count=0,
        epsilon=EPS,
    )
    n = normalise([0.2, 0.3], RunningStats().update_many([0.0, 1.0]), baseline=0.0, cfg=cfg)
    assert n.warmup and n.scale == 0.5
    assert n.values == pytest.approx([-0.05 / (0.5 + EPS), 0.05 / (0.5 + EPS)], rel=1e-12)


def test_group_mode_std_warmup_ends_after_warmup_batches_groups():
    """The std test of mode group applies to the first warmup_batches compared groups only:
    afterwards a uniform group is an ordinary group without signal and gets 0."""
    cfg = NormalisationConfig(mode="group", warmup_mode="global", warmup_batches=3, warmup_min_std=0.05,
                              warmup_min_count=0, epsilon=EPS)
    glob = RunningStats().update_many([0.0, 0.0, 1.0, 1.0])  # mean 0.5, std 0.5
    third = normalise([1.0] * 4, glob, 0.0, cfg, period=3)
    assert third.warmup and third.values == pytest.approx([0.5 / (0.5 + EPS)] * 4, rel=1e-15)
    fourth = normalise([1.0] * 4, glob, 0.0, cfg, period=4)
    assert not fourth.warmup and fourth.values == (0.0,) * 4
    # the count test is a period of its own, whatever warmup_batches says
    young = NormalisationConfig(mode="group", warmup_batches=0, warmup_min_std=0.05, warmup_min_count=5, epsilon=EPS)
    assert normalise([0.0, 1.0], glob, 0.0, young, period=100).warmup


def test_running_mode_uses_running_statistics():
    cfg = NormalisationConfig(mode="running", **NO_WARMUP)
    glob = RunningStats().update_many([0.0, 0.0, 1.0, 1.0])  # mean 0.5 std 0.5
    n = normalise([1.0, 1.0], glob, baseline=0.0, cfg=cfg)
    assert n.values == pytest.approx([0.5 / (0.5 + EPS)] * 2, rel=1e-15)


# A fixed batch of three groups. Pooled: mean 0.5; deviations +-0.5 (x4), +-0.3 (x4), squares
# sum 4 * 0.25 + 4 * 0.09 = 1.36, population std sqrt(1.36 / 8) = sqrt(0.17).
BATCH = [[0.0, 1.0], [0.2, 0.8], [1.0, 0.0, 0.8, 0.2]]


def test_batch_mode_over_a_fixed_batch_by_hand():
    pooled = [r for g in BATCH for r in g]
    mean = 0.5
    std = math.sqrt(sum((r - mean) ** 2 for r in pooled) / len(pooled))  # sqrt(1.36 / 8)
    assert std == pytest.approx(math.sqrt(0.17))
    cfg = NormalisationConfig(mode="batch", **NO_WARMUP)
    glob = RunningStats().update_many([5.0, 7.0])  # not read outside warm-up
    out = normalise_batch(BATCH, glob, 0.0, cfg, period=1)
    assert [n.values for n in out] == [tuple(pytest.approx((r - mean) / (std + EPS), rel=1e-12) for r in g)
                                       for g in BATCH]
    assert all(n.centre == pytest.approx(0.5) and n.scale == pytest.approx(math.sqrt(0.17)) for n in out)
    assert not any(n.warmup for n in out)
    # each record still reports its own group's statistics
    assert [(n.group_mean, n.group_std) for n in out] == [group_stats(g) for g in BATCH]
    # a uniform group inside a batch with spread gets the batch's (non-zero) advantage
    uniform = normalise_batch([[1.0, 1.0], [0.0, 0.0]], glob, 0.0, cfg, period=1)
    assert uniform[0].values == pytest.approx([0.5 / (0.5 + EPS)] * 2, rel=1e-12)


def test_batch_mode_warmup_first_batches_then_tiny_std():
    glob = RunningStats().update_many([0.0, 0.0, 0.0, 1.0])  # mean 0.25, std sqrt(3)/4
    g_std = math.sqrt(3) / 4
    cfg = NormalisationConfig(mode="batch", warmup_mode="global", warmup_batches=2, warmup_min_std=0.05,
                              warmup_min_count=0, epsilon=EPS)
    second = normalise_batch(BATCH, glob, 0.0, cfg, period=2)
    assert all(n.warmup for n in second)
    assert second[0].values == pytest.approx([(0.0 - 0.25) / (g_std + EPS), 0.75 / (g_std + EPS)], rel=1e-12)
    third = normalise_batch(BATCH, glob, 0.0, cfg, period=3)
    assert not any(n.warmup for n in third)
    assert third[0].values == pytest.approx([-0.5 / (math.sqrt(0.17) + EPS), 0.5 / (math.sqrt(0.17) + EPS)])
    # after the first batches, a batch whose std is tiny still falls back (any time)
    tiny = normalise_batch([[0.50, 0.51], [0.50, 0.51]], glob, 0.0, cfg, period=50)
    assert tiny[0].warmup and tiny[0].centre == 0.25 and tiny[0].scale == pytest.approx(g_std)
    fixed = NormalisationConfig(mode="batch", warmup_mode="fixed", fixed_scale=2.0, warmup_batches=1,
                                warmup_min_std=0.0, warmup_min_count=0, epsilon=EPS)
    first = normalise_batch(BATCH, glob, 0.0, fixed, period=1)
    assert first[1].warmup and first[1].values == pytest.approx([-0.3 / (2.0 + EPS), 0.3 / (2.0 + EPS)], rel=1e-12)


def test_only_batch_mode_takes_several_groups():
    with pytest.raises(ValueError):
        normalise_batch(BATCH, RunningStats(), 0.0, NormalisationConfig(mode="group"))


def test_none_mode_and_relative_to_baseline():
    glob = RunningStats().update_many([0.0, 1.0])
    plain = normalise([0.2, 0.9], glob, baseline=0.4, cfg=NormalisationConfig(mode="none"))
    assert plain.values == (0.2, 0.9) and not plain.warmup
    rel = normalise([0.2, 0.9], glob, baseline=0.4, cfg=NormalisationConfig(mode="none", relative_to_baseline=True))
    assert rel.values == pytest.approx([-0.2, 0.5])
    group_rel = normalise(
        [0.2, 0.9], glob, 0.4, NormalisationConfig(mode="group", relative_to_baseline=True, **NO_WARMUP)
    )
    # centre = baseline 0.4, scale = group std 0.35
    assert group_rel.values == pytest.approx([-0.2 / (0.35 + EPS), 0.5 / (0.35 + EPS)], rel=1e-12)


def test_amplification():
    assert amplify(0.5, TransformConfig(amplification="none")) == 0.5
    assert amplify(0.5, TransformConfig(amplification="tanh", amplification_param=2.0)) == pytest.approx(math.tanh(1.0))
    cube = TransformConfig(amplification="power", amplification_param=3)
    assert amplify(-2.0, cube) == -8.0 and amplify(0.5, cube) == 0.125
    root = TransformConfig(amplification="sign_power", amplification_param=0.5)
    assert amplify(-4.0, root) == -2.0 and amplify(0.25, root) == 0.5 and amplify(0.0, root) == 0.0
    huge = TransformConfig(amplification="power", amplification_param=309)  # 10**309 overflows a float
    assert amplify(10.0, huge) == math.inf and amplify(-10.0, huge) == -math.inf


def test_focusing():
    cfg = TransformConfig(positive_threshold=1.0, positive_boost=2.0, negative_threshold=-2.0, negative_damp=0.5)
    assert focus(1.5, cfg) == 2.0  # 1 + 2 * 0.5
    assert focus(-4.0, cfg) == -3.0  # -2 + 0.5 * (-2)
    assert focus(0.3, cfg) == 0.3 and focus(1.0, cfg) == 1.0 and focus(-2.0, cfg) == -2.0
    xs = [x / 10 for x in range(-60, 61)]
    ys = [focus(x, cfg) for x in xs]
    assert ys == sorted(ys)  # order of the samples kept


def test_clip_at_the_bounds_exactly():
    cfg = TransformConfig(clip=(-5.0, 5.0))
    assert clip(7.0, cfg) == 5.0 and clip(-9.0, cfg) == -5.0
    assert clip(5.0, cfg) == 5.0 and clip(-5.0, cfg) == -5.0
    assert clip(4.999, cfg) == 4.999
    assert clip(math.inf, cfg) == 5.0


def test_transform_order_amplify_focus_clip():
    cfg = TransformConfig(
        amplification="sign_power",
        amplification_param=0.5,
        positive_threshold=1.0,
        positive_boost=2.0,
        clip=(-5.0, 5.0),
    )
    # sqrt(4) = 2, then 1 + 2 * (2 - 1) = 3; focusing first would give sqrt(7)
    assert transform(4.0, cfg) == 3.0
    assert transform(16.0, cfg) == 5.0  # sqrt 4 -> 7 -> clipped
    assert transform(-36.0, cfg) == -5.0  # -6, damp 1 -> clipped
