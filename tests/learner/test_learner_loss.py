"""grpo_loss on hand-made tensors: each option acts exactly where it should."""

import math

import pytest
import torch

from learner.config import LearnerConfig
from learner.loss import LossInputError, LossStats, grpo_loss, k3_kl, loss_denominator

LN = math.log


def cfg(**kw):
    return LearnerConfig(**kw)


def leaf(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def t(values):
    return torch.tensor(values, dtype=torch.float64)


def single_tokens(ratios, advantages, weights=None, **kw):
    """B one-token completions with the given ratio pi_theta/pi_old and weight pi_old/mu."""
    weights = weights or [1.0] * len(ratios)
    logp_old = t([[-1.0]] * len(ratios))
    logp_new = leaf([[-1.0 + LN(r)] for r in ratios])
    logp_beh = t([[-1.0 - LN(w)] for w in weights])
    mask = torch.ones(len(ratios), 1)
    loss, stats = grpo_loss(
        logp_new, logp_old, logp_beh, None, t(advantages), mask, cfg(**kw)
    )
    loss.backward()
    return loss.item(), stats, logp_new.grad[:, 0].tolist()


# ---------------------------------------------------------------- on-policy = policy gradient
@pytest.mark.parametrize(
    "loss_type", ["token_mean", "sequence_mean", "constant_normalizer"]
)
@pytest.mark.parametrize("anchor", ["decoupled", "bypass"])
def test_on_policy_is_plain_policy_gradient(loss_type, anchor):
    c = cfg(loss_type=loss_type, anchor=anchor, max_completion_length=4)
    logp = t(
        [[-1.0, -2.0, -0.5], [-0.3, -1.2, 9.0]]
    )  # row 2 has 2 tokens; 9.0 is padding
    mask = t([[1, 1, 1], [1, 1, 0]])
    adv = t([1.5, -0.5])

    new = logp.clone().requires_grad_(True)
    loss, stats = grpo_loss(new, logp, logp, None, adv, mask, c)
    loss.backward()

    reference = logp.clone().requires_grad_(True)
    per_token = -(adv.unsqueeze(-1) * reference) * mask
    if loss_type == "token_mean":
        pg = per_token.sum() / 5
    elif loss_type == "sequence_mean":
        pg = (per_token.sum(-1) / t([3, 2])).mean()
    else:
        pg = per_token.sum() / (2 * 4)
    pg.backward()

    assert torch.allclose(new.grad, reference.grad)
    # ratio 1: the surrogate value is -(A * 1) aggregated the same way
    expected_value = {
        "token_mean": -(3 * 1.5 - 2 * 0.5) / 5,
        "sequence_mean": -(1.5 - 0.5) / 2,
        "constant_normalizer": -(3 * 1.5 - 2 * 0.5) / 8,
    }[loss_type]
    assert loss.item() == pytest.approx(expected_value)
    assert (
        stats.is_weight_mean == 1.0
        and stats.is_weight_min == 1.0
        and stats.is_weight_max == 1.0
    )
    assert stats.clip_low_frac == 0 and stats.clip_high_frac == 0
    assert stats.mismatch_kl == 0 and stats.mismatch_logppl_gap == 0 and stats.mismatch_abs_logp == 0
    assert stats.num_tokens == 5


# ---------------------------------------------------------------- clipping
def test_high_clip_acts_exactly_at_one_plus_epsilon_high():
    loss, stats, grad = single_tokens(
        [1.279, 1.281], [1.0, 1.0], epsilon=0.2, epsilon_high=0.28
    )
    assert grad[0] == pytest.approx(-1.279 / 2)  # d(-r A)/dlogp = -r A, over 2 tokens
    assert grad[1] == 0.0
    assert loss == pytest.approx(-(1.279 + 1.28) / 2)
    assert stats.clip_high_frac == 0.5 and stats.clip_low_frac == 0


def test_low_clip_acts_exactly_at_one_minus_epsilon():
    loss, stats, grad = single_tokens(
        [0.801, 0.799], [-1.0, -1.0], epsilon_low=0.2, epsilon_high=0.28
    )
    assert grad[0] == pytest.approx(0.801 / 2)
    assert grad[1] == 0.0
    assert loss == pytest.approx((0.801 + 0.8) / 2)
    assert stats.clip_low_frac == 0.5 and stats.clip_high_frac == 0


def test_clip_does_not_act_on_the_side_that_helps():
    # A > 0 and a small ratio, A < 0 and a large ratio: the unclipped term is the min, gradient flows
    _, stats, grad = single_tokens([0.5, 1.5], [1.0, -1.0])
    assert grad[0] == pytest.approx(-0.5 / 2) and grad[1] == pytest.approx(1.5 / 2)
    assert stats.clip_low_frac == 0 and stats.clip_high_frac == 0


def test_dual_clip_caps_negative_advantage_loss():
    loss, stats, grad = single_tokens([2.0, 5.0], [-1.0, -1.0], dual_clip_c=3.0)
    # r=2: loss 2 (below c), gradient -A r = 2; r=5: capped at -c A = 3, no gradient
    assert loss == pytest.approx((2.0 + 3.0) / 2)
    assert grad == pytest.approx([1.0, 0.0])
    assert stats.dual_clip_frac == 0.5
    loss_plain, _, _ = single_tokens([2.0, 5.0], [-1.0, -1.0])
    assert loss_plain == pytest.approx((2.0 + 5.0) / 2)


def test_dual_clip_leaves_positive_advantages_alone():
    loss, _, _ = single_tokens([5.0], [1.0], dual_clip_c=3.0)
    assert loss == pytest.approx(-1.2)


# ---------------------------------------------------------------- importance weights
def test_tis_cap_truncates_just_above_not_just_below():
    loss, stats, grad = single_tokens(
        [1.0, 1.0], [1.0, 1.0], weights=[1.99, 2.01], is_mode="truncate", is_cap=2.0
    )
    assert loss == pytest.approx(-(1.99 + 2.0) / 2)
    assert grad == pytest.approx(
        [-1.99 / 2, -2.0 / 2]
    )  # weight is detached: it scales, not differentiates
    assert stats.is_truncated_share == 0.5
    assert stats.is_weight_max == pytest.approx(2.01)  # raw weight reported
    assert stats.is_weight_mean == pytest.approx(2.0)


def test_token_mask_zeroes_weights_outside_band():
    w = [0.49, 0.51, 1.99, 2.01]
    loss, stats, grad = single_tokens(
        [1.0] * 4, [1.0] * 4, weights=w, is_mode="mask_token", is_min=0.5, is_max=2.0
    )
    assert loss == pytest.approx(
        -(0.51 + 1.99) / 4
    )  # masked tokens still count in the normaliser
    assert grad == pytest.approx([0.0, -0.51 / 4, -1.99 / 4, 0.0])
    assert stats.is_masked_share == 0.5


def test_mask_bounds_are_inclusive():
    loss, stats, _ = single_tokens(
        [1.0, 1.0], [1.0, 1.0], weights=[0.5, 2.0], is_mode="mask_token"
    )
    assert loss == pytest.approx(-(0.5 + 2.0) / 2)
    assert stats.is_masked_share == 0


def test_sequence_mask_drops_whole_sequence():
    c = cfg(is_mode="mask_sequence", is_min=0.5, is_max=2.0)
    logp_old = t([[-1.0, -1.0], [-1.0, -1.0]])
    logp_beh = logp_old - t(
        [[LN(1.0), LN(3.0)], [LN(1.5), 0.0]]
    )  # row 1 has one token above 2
    new = logp_old.clone().requires_grad_(True)
    loss, stats = grpo_loss(
        new, logp_old, logp_beh, None, t([1.0, 1.0]), torch.ones(2, 2), c
    )
    loss.backward()
    assert new.grad[0].tolist() == [0.0, 0.0]
    assert new.grad[1].tolist() == pytest.approx([-1.5 / 4, -1.0 / 4])
    assert loss.item() == pytest.approx(-(1.5 + 1.0) / 4)
    assert stats.is_masked_share == 0.5


def test_sequence_level_weight_is_geometric_mean():
    c = cfg(is_level="sequence", is_mode="none")
    logp_old = t([[-1.0, -1.0, -1.0, -1.0]])
    logp_beh = logp_old - t(
        [[LN(2.0), LN(0.5), LN(4.0), 7.0]]
    )  # last column is padding
    mask = t([[1, 1, 1, 0]])
    new = logp_old.clone().requires_grad_(True)
    loss, stats = grpo_loss(new, logp_old, logp_beh, None, t([1.0]), mask, c)
    geo = (2.0 * 0.5 * 4.0) ** (1 / 3)
    assert stats.is_weight_mean == pytest.approx(geo)
    assert stats.is_weight_min == pytest.approx(
        geo
    ) and stats.is_weight_max == pytest.approx(geo)
    assert loss.item() == pytest.approx(-geo)


def test_sequence_level_weight_truncated_at_cap():
    c = cfg(is_level="sequence", is_mode="truncate", is_cap=1.5)
    logp_old = t([[-1.0, -1.0]])
    logp_beh = logp_old - t([[LN(2.0), LN(2.0)]])
    loss, stats = grpo_loss(
        logp_old.clone(), logp_old, logp_beh, None, t([1.0]), torch.ones(1, 2), c
    )
    assert loss.item() == pytest.approx(-1.5)
    assert stats.is_truncated_share == 1.0


def test_bypass_has_ratio_to_behaviour_and_no_weight():
    c = cfg(anchor="bypass", is_mode="none")
    beh = t([[-2.0]])
    new = t([[-2.0 + LN(1.1)]]).requires_grad_(True)
    loss, stats = grpo_loss(new, None, beh, None, t([1.0]), torch.ones(1, 1), c)
    assert loss.item() == pytest.approx(-1.1)
    assert stats.is_weight_mean == 1.0


# ---------------------------------------------------------------- aggregation
def test_three_aggregations_on_unequal_lengths():
    # on-policy, so per-token loss = -A: row 1 three tokens of -1, row 2 one token of +2
    logp = t([[-1.0, -1.0, -1.0], [-1.0, 0.0, 0.0]])
    mask = t([[1, 1, 1], [1, 0, 0]])
    adv = t([1.0, -2.0])
    values = {}
    for loss_type in ("token_mean", "sequence_mean", "constant_normalizer"):
        c = cfg(loss_type=loss_type, max_completion_length=5)
        values[loss_type] = grpo_loss(logp.clone(), logp, logp, None, adv, mask, c)[
            0
        ].item()
    assert values["token_mean"] == pytest.approx((-3 + 2) / 4)
    assert values["sequence_mean"] == pytest.approx((-1 + 2) / 2)
    assert values["constant_normalizer"] == pytest.approx((-3 + 2) / (2 * 5))


@pytest.mark.parametrize(
    "loss_type", ["token_mean", "sequence_mean", "constant_normalizer"]
)
def test_micro_batches_with_global_denominator_add_up(loss_type):
    c = cfg(loss_type=loss_type, max_completion_length=6)
    torch.manual_seed(0)
    new = torch.randn(4, 3, dtype=torch.float64) - 1
    old = new + 0.1 * torch.randn(4, 3, dtype=torch.float64)
    beh = old + 0.1 * torch.randn(4, 3, dtype=torch.float64)
    mask = t([[1, 1, 1], [1, 0, 0], [1, 1, 0], [1, 1, 1]])
    adv = t([1.0, -1.0, 0.5, -0.2])
    whole = grpo_loss(new, old, beh, None, adv, mask, c)[0]
    denom = loss_denominator(mask[:2], c) + loss_denominator(mask[2:], c)
    halves = sum(
        grpo_loss(new[s], old[s], beh[s], None, adv[s], mask[s], c, denominator=denom)[
            0
        ]
        for s in (slice(0, 2), slice(2, 4))
    )
    assert halves.item() == pytest.approx(whole.item())


def test_truncated_completions_masked_on_request():
    logp = t([[-1.0, -1.0], [-1.0, -1.0]])
    adv = t([1.0, -3.0])
    truncated = torch.tensor([False, True])
    on = grpo_loss(
        logp.clone(),
        logp,
        logp,
        None,
        adv,
        torch.ones(2, 2),
        cfg(mask_truncated_completions=True),
        truncated=truncated,
    )
    off = grpo_loss(
        logp.clone(),
        logp,
        logp,
        None,
        adv,
        torch.ones(2, 2),
        cfg(),
        truncated=truncated,
    )
    assert on[0].item() == pytest.approx(-1.0)  # only row 1's two tokens
    assert on[1].num_tokens == 2
    assert off[0].item() == pytest.approx((-2 + 6) / 4)


# ---------------------------------------------------------------- KL, entropy, mismatch
def test_k3_value():
    value = k3_kl(t([LN(0.5)]), t([LN(0.25)]))  # p = pi_theta, q = pi_ref
    assert value.item() == pytest.approx(
        0.5 - LN(0.5) - 1
    )  # exp(d) - d - 1, d = log 0.25 - log 0.5
    assert k3_kl(t([-1.0]), t([-1.0])).item() == 0.0


def test_kl_term_in_loss_and_stats():
    c = cfg(beta=0.1)
    new = t([[LN(0.5)]]).requires_grad_(True)
    ref = t([[LN(0.25)]])
    loss, stats = grpo_loss(
        new, new.detach(), new.detach(), ref, t([0.0]), torch.ones(1, 1), c
    )
    k3 = 0.5 - LN(0.5) - 1
    assert stats.kl_ref == pytest.approx(k3)
    assert stats.kl_loss == pytest.approx(0.1 * k3)
    assert loss.item() == pytest.approx(0.1 * k3)
    loss.backward()
    # d/d(new) [exp(ref-new) - (ref-new) - 1] = -exp(ref-new) + 1 = 0.5
    assert new.grad.item() == pytest.approx(0.1 * 0.5)


def test_kl_measured_at_beta_zero_adds_nothing_to_the_loss():
    new = t([[LN(0.5)]]).requires_grad_(True)
    ref = t([[LN(0.25)]])
    loss, stats = grpo_loss(new, new.detach(), new.detach(), ref, t([0.0]), torch.ones(1, 1), cfg(beta=0.0))
    assert stats.kl_ref == pytest.approx(0.5 - LN(0.5) - 1)
    assert stats.kl_loss == 0.0 and loss.item() == 0.0


def test_kl_not_measured_is_absent_not_zero():
    new = t([[LN(0.5)]])
    _, stats = grpo_loss(new, new, new, None, t([0.0]), torch.ones(1, 1), cfg(beta=0.0))
    assert stats.kl_ref is None and "kl_ref" not in stats.as_dict()
    _, measured = grpo_loss(new, new, new, t([[LN(0.25)]]), t([0.0]), torch.ones(1, 1), cfg(beta=0.0))
    assert LossStats.merge([stats, measured]).kl_ref is None  # part of a step is no measure of it
    assert LossStats.merge([measured, measured]).kl_ref == pytest.approx(measured.kl_ref)


def test_step_beta_overrides_the_configured_one():
    new = t([[LN(0.5)]]).requires_grad_(True)
    ref = t([[LN(0.25)]])
    _, stats = grpo_loss(new, new.detach(), new.detach(), ref, t([0.0]), torch.ones(1, 1), cfg(beta=0.0), beta=0.3)
    assert stats.kl_loss == pytest.approx(0.3 * (0.5 - LN(0.5) - 1))
    with pytest.raises(LossInputError):
        grpo_loss(new, new.detach(), new.detach(), None, t([0.0]), torch.ones(1, 1), cfg(beta=0.0), beta=0.3)


def test_entropy_bonus():
    c = cfg(entropy_coef=0.01)
    logp = t([[-1.0, -1.0]])
    ent = t([[2.0, 4.0]]).requires_grad_(True)
    loss, stats = grpo_loss(
        logp.clone(), logp, logp, None, t([0.0]), torch.ones(1, 2), c, entropies=ent
    )
    assert stats.entropy == pytest.approx(3.0)
    assert loss.item() == pytest.approx(-0.01 * 3.0)
    loss.backward()
    assert ent.grad.tolist()[0] == pytest.approx([-0.005, -0.005])


def test_mismatch_stats():
    old = t([[LN(0.5), LN(0.2)]])
    beh = t([[LN(0.25), LN(0.2)]])  # mu differs from pi_old on token 1 only
    _, stats = grpo_loss(
        old.clone(), old, beh, None, t([1.0]), torch.ones(1, 2), cfg(is_mode="none")
    )
    # k3 KL(mu || pi_old) from samples of mu: exp(old - beh) - (old - beh) - 1
    assert stats.mismatch_kl == pytest.approx((2.0 - LN(2.0) - 1) / 2)
    assert stats.mismatch_logppl_gap == pytest.approx(LN(2.0) / 2)
    assert stats.mismatch_abs_logp == pytest.approx(LN(2.0) / 2)


def test_mismatch_abs_logp_counts_gaps_of_either_sign():
    old = t([[LN(0.5), LN(0.2)]])
    beh = t([[LN(0.25), LN(0.4)]])  # mu below pi_old on token 0, above on token 1: the mean gap cancels
    _, stats = grpo_loss(old.clone(), old, beh, None, t([1.0]), torch.ones(1, 2), cfg(is_mode="none"))
    assert stats.mismatch_logppl_gap == pytest.approx(0.0, abs=1e-6)
    assert stats.mismatch_abs_logp == pytest.approx(LN(2.0))


# ---------------------------------------------------------------- errors
def test_input_errors():
    x = torch.zeros(2, 3)
    m = torch.ones(2, 3)
    with pytest.raises(LossInputError, match="logp_old"):
        grpo_loss(x, None, x, None, torch.zeros(2), m, cfg())
    with pytest.raises(LossInputError, match="logp_ref"):
        grpo_loss(x, x, x, None, torch.zeros(2), m, cfg(beta=0.1))
    with pytest.raises(LossInputError, match="shape"):
        grpo_loss(x, x, torch.zeros(2, 4), None, torch.zeros(2), m, cfg())
    with pytest.raises(LossInputError, match="advantages"):
        grpo_loss(x, x, x, None, torch.zeros(3), m, cfg())


def test_config_rejects_unknown_and_bad_values():
    with pytest.raises(ValueError):
        LearnerConfig(epsilon_hgh=0.3)
    with pytest.raises(ValueError):
        LearnerConfig(is_min=3.0, is_max=2.0)
    with pytest.raises(ValueError):
        LearnerConfig(loss_type="dapo")
    assert LearnerConfig(epsilon_low=0.1).epsilon == 0.1
    assert LearnerConfig(epsilon=0.1).clip_high == 0.1
    assert LearnerConfig(warmup_ratio=0.1, max_steps=50).num_warmup_steps == 5
