"""Typed configuration of the off-policy-corrected GRPO learner.

Names follow TRL's ``GRPOConfig`` (and ``TrainingArguments``) where TRL has the same knob,
so a reader who knows TRL can map settings one to one. The knobs TRL lacks (the anchor of
the ratio, IcePop-style masking bounds, policy-lag bound, token-budget micro-batching) are
named for what they do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator


# The metric by which the learner tells the generator how many groups dynamic sampling
# dropped (source, value name); the generator samples that many more (its pacing bound).
DROPPED_SOURCE = "dynamic_sampling"
DROPPED_METRIC = "dynamic_sampling/groups_dropped"


class LearnerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # --- optimiser and schedule -------------------------------------------------------
    learning_rate: float = Field(
        1e-5, gt=0, description="Peak AdamW learning rate (after warm-up)."
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW decoupled weight decay.")
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1.")
    adam_beta2: float = Field(0.999, ge=0, lt=1, description="AdamW beta2.")
    adam_epsilon: float = Field(1e-8, gt=0, description="AdamW epsilon.")
    max_grad_norm: float = Field(
        1.0, gt=0, description="Global gradient-norm clip per optimiser step."
    )
    warmup_steps: int = Field(
        0, ge=0, description="Linear warm-up steps; overrides warmup_ratio when > 0."
    )
    warmup_ratio: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Warm-up as a share of max_steps (used when warmup_steps is 0).",
    )
    max_steps: int = Field(
        10_000, gt=0, description="Optimiser steps the cosine schedule decays over."
    )

    # --- GRPO surrogate ---------------------------------------------------------------
    epsilon: float = Field(
        0.2,
        gt=0,
        lt=1,
        validation_alias=AliasChoices("epsilon", "epsilon_low"),
        description="Lower clip: the ratio is clipped below at 1 - epsilon (TRL: epsilon, alias epsilon_low).",
    )
    epsilon_high: float | None = Field(
        None,
        gt=0,
        description="Upper clip: ratio clipped above at 1 + epsilon_high; None means epsilon (DAPO uses 0.28).",
    )
    dual_clip_c: float | None = Field(
        None,
        gt=1,
        description="Dual-clip constant c > 1: for negative advantages the loss is capped at -c*A; None disables.",
    )
    num_iterations: int = Field(
        1, ge=1, description="Optimiser steps taken on each batch (TRL's mu)."
    )
    loss_type: Literal["token_mean", "sequence_mean", "constant_normalizer"] = Field(
        "token_mean",
        description="Aggregation: token_mean = sum over all tokens / token count (DAPO); sequence_mean = mean over "
        "sequences of per-sequence token means (original GRPO); constant_normalizer = sum / (sequences * "
        "max_completion_length) (Dr. GRPO).",
    )
    max_completion_length: int = Field(
        512, gt=0, description="The constant of the Dr. GRPO normaliser (tokens)."
    )
    mask_truncated_completions: bool = Field(
        False,
        description="Exclude completions cut at the length limit (finish_reason == 'length') from the loss.",
    )
    temperature: float = Field(
        1.0,
        gt=0,
        description="Sampling temperature; logits are divided by it to match the sampler.",
    )
    entropy_coef: float = Field(
        0.0, ge=0, description="Entropy bonus coefficient; 0 disables the bonus."
    )

    # --- KL to the reference ----------------------------------------------------------
    # The reference is the base model: the policy with its LoRA adapters off, or, for full
    # fine-tuning, a frozen copy taken at start (one more model's weights in memory).
    beta: float = Field(
        0.0,
        ge=0,
        validation_alias=AliasChoices("beta", "init_kl_coef"),
        description="KL-to-reference coefficient (k3 estimator) of the loss; with beta_schedule its start, with "
        "adap_kl_ctrl its initial value (TRL GRPO: beta; TRL PPO: init_kl_coef). 0: no KL term.",
    )
    kl_measure_every: int = Field(
        1,
        ge=0,
        description="Measure loss/kl_ref (mean per-token k3 KL to the reference) every this many learner steps "
        "while beta is 0, at the cost of one reference forward pass without gradient: a step with LoRA took "
        "about 1.4x as long on a CPU (benchmarks/learner_step.py, 'KL measured / not'), so every 10 steps costs "
        "about 4%. 0: never. A step that does not measure it reports no kl_ref (and kl_measured 0). Any step "
        "whose beta is above 0 measures it, for the loss.",
    )
    beta_schedule: Literal["constant", "linear"] = Field(
        "constant",
        description="constant: beta throughout; linear: from beta to beta_end over beta_schedule_steps optimiser "
        "steps, then beta_end (a small KL weight early, more conservative later).",
    )
    beta_end: float = Field(
        0.0, ge=0, description="Beta at the end of the linear schedule."
    )
    beta_schedule_steps: int = Field(
        1000, ge=0, description="Optimiser steps the linear schedule takes from beta to beta_end."
    )
    adap_kl_ctrl: bool = Field(
        False,
        description="Adapt beta to hold the measured KL near target (PPO's adaptive KL controller, Ziegler et al. "
        "2019): beta <- beta * (1 + clip(kl_ref / target - 1, -0.2, 0.2) * samples / horizon) after each step. "
        "Needs beta > 0 and beta_schedule constant.",
    )
    target: float = Field(
        0.05,
        gt=0,
        description="The KL the adaptive controller aims at, as loss/kl_ref: the mean per-token k3 KL to the "
        "reference (TRL PPO's default 6 is a whole-sequence KL and does not carry over).",
    )
    horizon: float = Field(
        10_000,
        gt=0,
        description="Adaptive controller's horizon in samples (completions), as TRL's PPO: at a lasting error of 20% "
        "or more beta moves by a factor of about e^0.2 every horizon samples.",
    )

    # --- off-policy correction --------------------------------------------------------
    anchor: Literal["decoupled", "bypass"] = Field(
        "decoupled",
        description="decoupled: ratio to a recomputed old (proximal) policy pi_old, times the importance weight "
        "w = pi_old/mu; bypass: ratio directly to the behaviour policy mu, no separate weight.",
    )
    is_level: Literal["token", "sequence"] = Field(
        "token",
        description="Importance weight per token, or one per sequence: the length-normalised geometric mean "
        "exp(mean_t(log pi_old - log mu)).",
    )
    is_mode: Literal["truncate", "mask_token", "mask_sequence", "none"] = Field(
        "truncate",
        description="truncate: w = min(w, is_cap) (TIS); mask_token: w = 0 where w is outside [is_min, is_max]; "
        "mask_sequence: a whole sequence gets w = 0 when any of its tokens is outside (IcePop); none: raw w.",
    )
    is_cap: float = Field(
        2.0, gt=0, description="TIS truncation cap of the importance weight."
    )
    is_min: float = Field(
        0.5,
        ge=0,
        description="Lower bound of the kept importance-weight band (masking modes).",
    )
    is_max: float = Field(
        2.0,
        gt=0,
        description="Upper bound of the kept importance-weight band (masking modes).",
    )
    max_policy_lag: int = Field(
        4,
        ge=0,
        description="Samples whose policy_version is more than this many versions behind the learner are dropped.",
    )

    # --- batching ---------------------------------------------------------------------
    groups_per_step: int = Field(
        8, ge=1, description="GRPO groups accumulated into one optimiser step."
    )
    drop_uniform_groups: bool = Field(
        False,
        description="Dynamic sampling (DAPO): groups with no comparison signal -- every compared member's "
        "reward before normalisation (reward_enhanced) equal -- are not trained on, under every reshaping "
        "config (a reward that separates all-fail members keeps its group); the generator samples more to "
        "keep each step full.",
    )
    micro_batch_tokens: int = Field(
        8192,
        ge=1,
        description="Token budget of one micro-batch, counted as rows x padded length.",
    )

    # --- model ------------------------------------------------------------------------
    use_lora: bool = Field(
        True, description="Train a peft LoRA adapter; False means full fine-tuning."
    )
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(
        32, ge=1, description="LoRA scaling numerator (scale = alpha / r)."
    )
    # Dropout makes two forward passes of the same weights differ, so the on-policy ratio
    # would not be exactly 1 and resume would not be bit-exact; off by default.
    lora_dropout: float = Field(
        0.0, ge=0, lt=1, description="Dropout on the LoRA branch."
    )
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        description="Module names that get LoRA adapters.",
    )
    gradient_checkpointing: bool = Field(
        True, description="Recompute activations in backward (CUDA only)."
    )
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="Arithmetic of the forward and backward passes; weights, gradients and optimiser state stay "
        "float32 either way. bfloat16 runs them under bf16 autocast. auto: bfloat16 on CUDA and on CPUs with "
        "native bf16 instructions (avx512_bf16 or amx_bf16), where a learner step takes about 0.6 of the float32 "
        "time (benchmarks/learner_step.py, its bf16 / float32 ratio); float32 on other CPUs, which would only "
        "emulate bf16.",
    )
    share_prompt_forward: bool = Field(
        True,
        description="Run each distinct prompt of a micro-batch once and its completions on the prompt's key/value "
        "cache (a GRPO group's K rows share one prompt): the same log-probs and gradients in about half the "
        "step time on a CPU (benchmarks/learner_step.py). Not used under gradient checkpointing, which keeps no "
        "cache.",
    )

    # --- bookkeeping ------------------------------------------------------------------
    seed: int = Field(
        0, description="Seed of python, numpy and torch RNGs (adapter init included)."
    )
    checkpoint_dir: Path = Field(
        Path("checkpoints/learner"),
        description="Where learner checkpoints are written.",
    )
    publish_dir: Path = Field(
        Path("checkpoints/policy"),
        description="Where published policy weights are written.",
    )
    publish_every: int = Field(
        1,
        ge=1,
        description="Publish a new policy version every this many learner steps.",
    )

    @model_validator(mode="after")
    def _check_bounds(self) -> "LearnerConfig":
        if self.is_min > self.is_max:
            raise ValueError(
                f"is_min ({self.is_min}) must not exceed is_max ({self.is_max})"
            )
        if self.adap_kl_ctrl and self.beta == 0:
            raise ValueError("adap_kl_ctrl multiplies beta: it needs beta > 0")
        if self.adap_kl_ctrl and self.beta_schedule != "constant":
            raise ValueError("adap_kl_ctrl sets beta itself: beta_schedule must be constant")
        return self

    @property
    def needs_reference(self) -> bool:
        """True when some step computes log-probs under the reference policy."""
        scheduled = self.beta_schedule == "linear" and self.beta_end > 0
        return self.kl_measure_every > 0 or self.beta > 0 or scheduled

    @property
    def epsilon_low(self) -> float:
        return self.epsilon

    @property
    def clip_high(self) -> float:
        """Upper clip epsilon actually used (epsilon_high, or epsilon when unset)."""
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    @property
    def num_warmup_steps(self) -> int:
        if self.warmup_steps > 0:
            return self.warmup_steps
        return int(round(self.warmup_ratio * self.max_steps))
