"""The off-policy-corrected GRPO loss on per-token log-probabilities; pure torch, no model.

TRL implements its GRPO loss inside ``GRPOTrainer._compute_loss``, bound to the trainer's
own generation loop and batch dicts; it cannot be called on log-probs that arrive from a
stream with their behaviour log-probs already recorded. The formula is therefore written
here as a function of tensors, following TRL's conventions (clip fractions, k3 KL added
after the importance weight, the three normalisers).

Shapes: ``B`` completions, ``T`` completion positions (right-padded). Every ``logp_*`` and
``entropies`` is ``[B, T]`` float, ``completion_mask`` ``[B, T]`` bool/0-1, ``advantages``
and ``truncated`` ``[B]``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from learner.config import LearnerConfig


class LossInputError(ValueError):
    """Inputs of ``grpo_loss`` with wrong shapes or missing tensors for the chosen options."""


@dataclass
class LossStats:
    """Diagnostics of one (micro-)batch. Loss parts are this batch's share of the step's
    loss (they add up over micro-batches); the rest are means over active tokens."""

    loss: float
    pg_loss: float
    kl_loss: float  # beta * aggregated k3 KL
    entropy_loss: float  # -entropy_coef * aggregated entropy
    is_weight_mean: (
        float  # raw importance weight pi_old / mu, before truncation or masking
    )
    is_weight_min: float
    is_weight_max: float
    is_truncated_share: float  # share of tokens whose weight was cut to is_cap
    is_masked_share: float  # share of tokens given weight 0 by the masking modes
    clip_low_frac: float  # ratio below 1 - epsilon with A < 0 (the low clip is active)
    clip_high_frac: float  # ratio above 1 + epsilon_high with A > 0
    dual_clip_frac: float  # A < 0 and ratio above dual_clip_c
    kl_ref: float | None  # mean k3 KL(pi_theta || pi_ref); None: not measured (no reference pass)
    mismatch_kl: float  # mean k3 KL(mu || pi_old), the behaviour/learner mismatch
    mismatch_logppl_gap: (
        float  # log-perplexity of mu minus that of pi_old on the sampled tokens
    )
    mismatch_abs_logp: float  # mean |log pi_old - log mu| per sampled token
    entropy: float
    num_tokens: int

    def as_dict(self) -> dict[str, float]:
        """Every measured value as a float; one not measured (None) is left out, never read as 0."""
        return {k: float(v) for k, v in asdict(self).items() if v is not None}

    @staticmethod
    def merge(parts: list["LossStats"]) -> "LossStats":
        """Combine micro-batch stats: loss parts add, means are token-weighted, min/max carry."""
        if not parts:
            raise ValueError("nothing to merge")
        tokens = sum(p.num_tokens for p in parts)
        weight = [p.num_tokens / tokens if tokens else 1.0 / len(parts) for p in parts]

        def mean(name: str) -> float:
            return sum(w * getattr(p, name) for w, p in zip(weight, parts))

        summed = {"loss", "pg_loss", "kl_loss", "entropy_loss"}
        values = {}
        for name in asdict(parts[0]):
            if name in summed:
                values[name] = sum(getattr(p, name) for p in parts)
            elif name == "is_weight_min":
                values[name] = min(p.is_weight_min for p in parts)
            elif name == "is_weight_max":
                values[name] = max(p.is_weight_max for p in parts)
            elif name == "num_tokens":
                values[name] = tokens
            elif name == "kl_ref" and any(p.kl_ref is None for p in parts):
                values[name] = None  # a KL of some micro-batches only is no measure of the step
            else:
                values[name] = mean(name)
        return LossStats(**values)


def k3_kl(logp_p: torch.Tensor, logp_q: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(p || q) from samples of p: exp(q - p) - (q - p) - 1 (>= 0)."""
    d = logp_q - logp_p
    return torch.exp(d) - d - 1


def loss_mask(completion_mask: torch.Tensor, truncated: torch.Tensor | None, cfg: LearnerConfig) -> torch.Tensor:
    """The tokens the loss counts: the completion's, less truncated completions' when
    ``mask_truncated_completions`` (a cut-off answer has no honest reward)."""
    if cfg.mask_truncated_completions and truncated is not None:
        return completion_mask * (~truncated.bool()).to(completion_mask.dtype).unsqueeze(-1)
    return completion_mask


def loss_denominator(completion_mask: torch.Tensor, cfg: LearnerConfig) -> float:
    """The normaliser ``loss_type`` divides by, for this batch alone. It is additive over
    micro-batches, so a step's denominator is the sum over its micro-batches."""
    rows = completion_mask.shape[0]
    if cfg.loss_type == "token_mean":
        return float(completion_mask.sum())
    if cfg.loss_type == "sequence_mean":
        return float(rows)
    return float(rows * cfg.max_completion_length)


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    cfg: LearnerConfig,
    denominator: float | None = None,
) -> torch.Tensor:
    """Reduce ``[B, T]`` values to a scalar the way ``cfg.loss_type`` says."""
    if denominator is None:
        denominator = loss_denominator(mask, cfg)
    denominator = max(denominator, 1.0)  # an empty batch contributes 0, not NaN
    masked = per_token * mask
    if cfg.loss_type == "sequence_mean":
        per_sequence = masked.sum(-1) / mask.sum(-1).clamp(min=1.0)
        return per_sequence.sum() / denominator
    return masked.sum() / denominator


def importance_weights(
    logp_old: torch.Tensor,
    logp_behaviour: torch.Tensor,
    mask: torch.Tensor,
    cfg: LearnerConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Detached importance weights w = pi_old / mu, per token or per sequence, then
    truncated/masked per ``cfg.is_mode``.

    Returns ``(weight, raw_weight, truncated, masked)``, all ``[B, T]``; the last two are
    bool marks of tokens the cap or the masks acted on.
    """
    log_w = (logp_old - logp_behaviour).detach() * mask
    if cfg.is_level == "sequence":
        # Geometric mean of the token ratios: a raw product over hundreds of tokens would
        # be 0 or inf, and would weigh long completions differently from short ones.
        mean_log_w = log_w.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(
            min=1.0
        )
        log_w = mean_log_w.expand_as(log_w)
    raw = torch.exp(log_w)
    active = mask.bool()
    no_mark = torch.zeros_like(active)

    if cfg.is_mode == "truncate":
        truncated = (raw > cfg.is_cap) & active
        return raw.clamp(max=cfg.is_cap), raw, truncated, no_mark
    if cfg.is_mode == "none":
        return raw, raw, no_mark, no_mark

    outside = ((raw < cfg.is_min) | (raw > cfg.is_max)) & active
    if cfg.is_mode == "mask_sequence":
        outside = outside.any(-1, keepdim=True).expand_as(outside) & active
    return raw.masked_fill(outside, 0.0), raw, no_mark, outside


def _check_inputs(
    tensors: dict[str, torch.Tensor | None], advantages: torch.Tensor, truncated
) -> None:
    shape = tensors["logp_new"].shape
    if len(shape) != 2:
        raise LossInputError(f"logp_new must be [B, T], got {tuple(shape)}")
    for name, t in tensors.items():
        if t is not None and t.shape != shape:
            raise LossInputError(
                f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}"
            )
    if advantages.shape != shape[:1]:
        raise LossInputError(
            f"advantages must be [B]={shape[0]}, got {tuple(advantages.shape)}"
        )
    if truncated is not None and truncated.shape != shape[:1]:
        raise LossInputError(
            f"truncated must be [B]={shape[0]}, got {tuple(truncated.shape)}"
        )


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> float:
    n = mask.sum()
    return float((x * mask).sum() / n) if n > 0 else 0.0


def grpo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor | None,
    logp_behaviour: torch.Tensor,
    logp_ref: torch.Tensor | None,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    cfg: LearnerConfig,
    *,
    entropies: torch.Tensor | None = None,
    truncated: torch.Tensor | None = None,
    denominator: float | None = None,
    beta: float | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """Clipped, importance-corrected GRPO loss (to minimise) and its diagnostics.

    Args:
        logp_new: log pi_theta of the sampled tokens ``[B, T]`` (carries the gradient).
        logp_old: log pi_old ``[B, T]`` (required for ``anchor='decoupled'``; else optional,
            used for the mismatch diagnostics, falling back to ``logp_new`` detached).
        logp_behaviour: log mu recorded by the sampler ``[B, T]``.
        logp_ref: log pi_ref ``[B, T]``; required when beta > 0. Given at beta 0, the KL is
            measured (``stats.kl_ref``) but adds nothing to the loss; left out, ``kl_ref`` is None.
        advantages: one advantage per completion ``[B]``.
        completion_mask: 1 on real completion tokens ``[B, T]``.
        entropies: per-token entropy of pi_theta ``[B, T]``; required when
            ``cfg.entropy_coef > 0`` (it then must carry the gradient).
        truncated: ``[B]`` bool, completions cut at the length limit.
        denominator: the step-wide normaliser (sum of ``loss_denominator`` over the
            micro-batches of a gradient-accumulation step); default: this batch's own.
        beta: the KL coefficient of this step (a schedule or controller sets it); default
            ``cfg.beta``.
    """
    _check_inputs(
        {"logp_new": logp_new, "logp_old": logp_old, "logp_behaviour": logp_behaviour,
         "logp_ref": logp_ref, "completion_mask": completion_mask, "entropies": entropies},
        advantages, truncated,
    )  # fmt: skip
    if cfg.anchor == "decoupled" and logp_old is None:
        raise LossInputError("anchor='decoupled' needs logp_old")
    beta = cfg.beta if beta is None else beta
    if beta > 0 and logp_ref is None:
        raise LossInputError("beta > 0 needs logp_ref")
    if cfg.entropy_coef > 0 and entropies is None:
        raise LossInputError("entropy_coef > 0 needs entropies")

    mask = loss_mask(completion_mask.to(logp_new.dtype), truncated, cfg)
    if denominator is None:
        denominator = loss_denominator(mask, cfg)
    active = mask.bool()
    adv = advantages.to(logp_new.dtype).unsqueeze(-1)  # [B, 1], broadcast over tokens

    # The ratio's anchor: the proximal policy (decoupled PPO) or the sampler itself.
    logp_anchor = (logp_old if cfg.anchor == "decoupled" else logp_behaviour).detach()
    ratio = torch.exp(logp_new - logp_anchor)
    low, high = 1.0 - cfg.epsilon_low, 1.0 + cfg.clip_high
    per_token = -torch.min(ratio * adv, ratio.clamp(low, high) * adv)
    if cfg.dual_clip_c is not None:
        # Dual clip: a negative advantage with a huge ratio would give an unbounded loss.
        capped = torch.min(per_token, -cfg.dual_clip_c * adv)
        per_token = torch.where(adv < 0, capped, per_token)

    logp_prox = (logp_old if logp_old is not None else logp_new).detach()
    if cfg.anchor == "decoupled":
        weight, raw_w, is_trunc, is_masked = importance_weights(
            logp_prox, logp_behaviour, mask, cfg
        )
        per_token = per_token * weight
    else:
        # bypass: the clipped ratio to mu already is the correction; w = 1 everywhere.
        raw_w = torch.ones_like(per_token)
        is_trunc = is_masked = torch.zeros_like(active)

    pg_loss = aggregate(per_token, mask, cfg, denominator)
    loss = pg_loss
    kl_ref = None if logp_ref is None else k3_kl(logp_new, logp_ref.detach())
    kl_loss = torch.zeros((), dtype=loss.dtype, device=loss.device)
    if beta > 0:
        kl_loss = beta * aggregate(kl_ref, mask, cfg, denominator)
        loss = loss + kl_loss
    entropy_loss = torch.zeros_like(kl_loss)
    if cfg.entropy_coef > 0:
        entropy_loss = -cfg.entropy_coef * aggregate(entropies, mask, cfg, denominator)
        loss = loss + entropy_loss

    with torch.no_grad():
        r = ratio.detach()
        n_active = int(active.sum())
        w_active = raw_w[active]
        mismatch = k3_kl(logp_behaviour, logp_prox)  # samples come from mu
        stats = LossStats(
            loss=float(loss),
            pg_loss=float(pg_loss),
            kl_loss=float(kl_loss),
            entropy_loss=float(entropy_loss),
            is_weight_mean=float(w_active.mean()) if n_active else 1.0,
            is_weight_min=float(w_active.min()) if n_active else 1.0,
            is_weight_max=float(w_active.max()) if n_active else 1.0,
            is_truncated_share=_masked_mean(is_trunc.to(mask.dtype), mask),
            is_masked_share=_masked_mean(is_masked.to(mask.dtype), mask),
            clip_low_frac=_masked_mean(((r < low) & (adv < 0)).to(mask.dtype), mask),
            clip_high_frac=_masked_mean(((r > high) & (adv > 0)).to(mask.dtype), mask),
            dual_clip_frac=(
                _masked_mean(((r > cfg.dual_clip_c) & (adv < 0)).to(mask.dtype), mask)
                if cfg.dual_clip_c is not None else 0.0
            ),  # fmt: skip
            kl_ref=None if kl_ref is None else _masked_mean(kl_ref.detach(), mask),
            mismatch_kl=_masked_mean(mismatch, mask),
            mismatch_logppl_gap=_masked_mean(logp_prox - logp_behaviour, mask),
            mismatch_abs_logp=_masked_mean((logp_prox - logp_behaviour).abs(), mask),
            entropy=(
                _masked_mean(entropies.detach(), mask) if entropies is not None else 0.0
            ),
            num_tokens=n_active,
        )
    return loss, stats
