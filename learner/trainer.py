"""The learner loop: one ``step(records)`` = one batch of GRPO groups, ``num_iterations``
optimiser steps on it. Read top to bottom:

1. batch: drop stale samples, pack whole groups into micro-batches under a token budget;
2. old policy: log pi_old of every sample before any update (decoupled anchor only);
3. reference: log pi_ref with the adapters off (or from the frozen copy), on the steps that
   measure the KL to it or weigh it in the loss (``learner.kl_control``);
4. per iteration: forward, loss, backward over the micro-batches (gradient accumulation
   with one step-wide normaliser), clip, AdamW, schedule;
5. the adaptive KL controller sees the measured KL; metrics.

Kafka, checkpoints on disk and the policy topic are driven from outside through
``step``, ``save_checkpoint``, ``resume`` and ``publish``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from learner import checkpoint
from learner.batching import MicroBatch, Record, plan_step
from learner.config import LearnerConfig
from learner.kl_control import KLCoefficient
from learner.loss import LossStats, grpo_loss, loss_denominator, loss_mask
from learner.model import (
    base_model_name,
    frozen_reference,
    load_policy,
    reference_logprobs,
    token_logprobs,
    trainable_parameters,
)
from learner.precision import autocast_dtype


@dataclass
class StepMetrics:
    step: int  # optimiser steps taken so far
    policy_version: int
    num_groups: int
    num_samples: int
    num_tokens: int  # completion tokens trained on
    dropped_stale: int
    lag_histogram: dict[int, int]
    loss: (
        LossStats | None
    )  # merged over micro-batches of the last iteration; None when nothing trained
    grad_norm: float
    learning_rate: float
    tokens_per_s: float
    batch_seconds: float  # batch assembly
    step_seconds: float  # whole step, batch assembly included
    kl_coef: float  # beta of this step's KL term (schedule or adaptive controller)
    kl_measured: bool  # loss.kl_ref was computed against the reference on this step

    def as_values(self) -> dict[str, float]:
        """Flat ``name -> float`` map for the ``values`` field of a Metric event."""
        values = {
            k: float(v)
            for k, v in asdict(self).items()
            if k not in ("loss", "lag_histogram")
        }
        if self.loss is not None:
            values.update({f"loss/{k}": v for k, v in self.loss.as_dict().items()})
        values.update({f"lag/{lag}": float(n) for lag, n in self.lag_histogram.items()})
        return values


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Learner:
    def __init__(
        self,
        cfg: LearnerConfig,
        model_dir: str | Path,
        device: str | torch.device | None = None,
    ):
        self.cfg = cfg
        self.model_dir = Path(model_dir)
        self.device = torch.device(
            device or ("cuda" if torch.cuda.is_available() else "cpu")
        )
        seed_everything(cfg.seed)
        self.model = load_policy(self.model_dir, cfg, self.device)
        self.compute_dtype = autocast_dtype(cfg.precision, self.device)
        self.reference = frozen_reference(self.model, cfg)
        self.kl_coef = KLCoefficient(cfg)
        self.optimizer = torch.optim.AdamW(
            trainable_parameters(self.model),
            lr=cfg.learning_rate,
            betas=(cfg.adam_beta1, cfg.adam_beta2),
            eps=cfg.adam_epsilon,
            weight_decay=cfg.weight_decay,
        )
        self.scheduler = get_cosine_schedule_with_warmup(
            self.optimizer, cfg.num_warmup_steps, cfg.max_steps
        )
        self.step_count = 0  # optimiser steps
        # version of the latest published weights (0 = the initial policy)
        self.policy_version = 0
        self.published_step = 0  # step_count when that version was published
        self.offsets: checkpoint.Offsets = {}

    # ------------------------------------------------------------------ forward helpers
    def _logprobs(self, mb: MicroBatch, with_entropy: bool):
        return token_logprobs(
            self.model, mb.input_ids, mb.attention_mask, mb.completion_start, self.cfg.temperature,
            completion_length=mb.completion_mask.shape[1], with_entropy=with_entropy,
            entropy_grad=self.cfg.entropy_coef > 0, share_prompts=self.cfg.share_prompt_forward,
            compute_dtype=self.compute_dtype,
        )  # fmt: skip

    def _reference(self, mb: MicroBatch) -> torch.Tensor:
        return reference_logprobs(
            self.model, self.reference, mb.input_ids, mb.attention_mask, mb.completion_start,
            self.cfg.temperature, completion_length=mb.completion_mask.shape[1],
            share_prompts=self.cfg.share_prompt_forward, compute_dtype=self.compute_dtype,
        )  # fmt: skip

    # ------------------------------------------------------------------ the step
    def step(self, records: Sequence[Record]) -> StepMetrics:
        cfg = self.cfg
        t0 = time.perf_counter()

        # 1. batch
        plan = plan_step(
            records,
            self.policy_version,
            cfg.max_policy_lag,
            cfg.micro_batch_tokens,
            max_groups=cfg.groups_per_step,
        )
        micro = [mb.to(self.device) for mb in plan.micro_batches]
        batch_seconds = time.perf_counter() - t0
        beta = self.kl_coef.beta(self.step_count)
        if not micro:  # everything was stale: no update
            return self._metrics(plan, None, 0.0, batch_seconds, t0, beta)

        # the step-wide normaliser counts the tokens grpo_loss will count, micro-batch by micro-batch
        denominator = sum(
            loss_denominator(loss_mask(mb.completion_mask.float(), mb.truncated, cfg), cfg) for mb in micro
        )

        # 2. old policy. With one iteration pi_old equals pi_theta before the update, so its
        # log-probs are the detached ones of the training forward (saves one pass, as TRL does).
        old: list[torch.Tensor | None] = [None] * len(micro)
        if cfg.anchor == "decoupled" and cfg.num_iterations > 1:
            with torch.no_grad():
                old = [self._logprobs(mb, with_entropy=False) for mb in micro]

        # 3. reference: measured on schedule even at beta 0, so kl_ref is never a 0 nobody computed
        ref: list[torch.Tensor | None] = [None] * len(micro)
        if self.kl_coef.measures(self.step_count // cfg.num_iterations, beta):
            ref = [self._reference(mb) for mb in micro]

        # 4. iterations
        for _ in range(cfg.num_iterations):
            self.optimizer.zero_grad(set_to_none=True)
            parts = []
            for i, mb in enumerate(micro):
                logp_new, entropy = self._logprobs(mb, with_entropy=True)
                logp_old = old[i]
                if logp_old is None and cfg.anchor == "decoupled":
                    logp_old = logp_new.detach()
                loss, stats = grpo_loss(
                    logp_new, logp_old, mb.behaviour_logprobs, ref[i], mb.advantages, mb.completion_mask, cfg,
                    entropies=entropy, truncated=mb.truncated, denominator=denominator, beta=beta,
                )  # fmt: skip
                loss.backward()
                parts.append(stats)
            grad_norm = torch.nn.utils.clip_grad_norm_(
                trainable_parameters(self.model), cfg.max_grad_norm
            )
            self.optimizer.step()
            self.scheduler.step()
            self.step_count += 1

        # 5. controller, metrics
        stats = LossStats.merge(parts)
        if stats.kl_ref is not None:
            self.kl_coef.observe(stats.kl_ref, plan.num_samples)
        return self._metrics(plan, stats, float(grad_norm), batch_seconds, t0, beta)

    def _metrics(
        self,
        plan,
        stats: LossStats | None,
        grad_norm: float,
        batch_seconds: float,
        t0: float,
        beta: float,
    ):
        elapsed = time.perf_counter() - t0
        trained = plan.num_completion_tokens if stats is not None else 0
        return StepMetrics(
            step=self.step_count,
            policy_version=self.policy_version,
            num_groups=plan.num_groups,
            num_samples=plan.num_samples,
            num_tokens=trained,
            dropped_stale=plan.dropped_stale,
            lag_histogram=plan.lag_histogram,
            loss=stats,
            grad_norm=grad_norm,
            learning_rate=self.scheduler.get_last_lr()[0],
            tokens_per_s=(
                trained * self.cfg.num_iterations / elapsed if elapsed > 0 else 0.0
            ),
            batch_seconds=batch_seconds,
            step_seconds=elapsed,
            kl_coef=beta,
            kl_measured=stats is not None and stats.kl_ref is not None,
        )

    # ------------------------------------------------------------------ persistence
    def due_for_publish(self) -> bool:
        """True when ``publish_every`` optimiser steps have passed since the last publish."""
        return self.step_count - self.published_step >= self.cfg.publish_every

    def publish(self, directory: str | Path | None = None) -> dict:
        """Write the current weights as the next policy version; returns the fields of a
        ``PolicyVersion`` event (less event_id/created_at_ms)."""
        self.policy_version += 1
        self.published_step = self.step_count
        location, sha = checkpoint.publish_policy_weights(
            self.model, directory or self.cfg.publish_dir, self.policy_version
        )
        return {
            "version": self.policy_version,
            "learner_step": self.step_count,
            "location": location,
            "sha256": sha,
            "base_model": base_model_name(self.model),
        }

    def save_checkpoint(
        self,
        offsets: checkpoint.Offsets | None = None,
        directory: str | Path | None = None,
        extra: dict | None = None,
    ) -> Path:
        """Checkpoint everything; ``offsets`` are the next Kafka offsets to consume,
        ``extra`` any JSON state of the caller to restore with them (``Checkpoint.extra``).
        """
        if offsets is not None:
            self.offsets = {t: dict(p) for t, p in offsets.items()}
        return checkpoint.save_checkpoint(
            directory or self.cfg.checkpoint_dir, self.model, self.optimizer, self.scheduler,
            step=self.step_count, policy_version=self.policy_version, offsets=self.offsets,
            published_step=self.published_step, extra=extra, kl_controller=self.kl_coef.state_dict(),
        )  # fmt: skip

    def resume(
        self, directory: str | Path | None = None
    ) -> checkpoint.Checkpoint | None:
        """Load the newest checkpoint, if any; returns it (its offsets say where to seek)."""
        ckpt = checkpoint.load_latest(directory or self.cfg.checkpoint_dir)
        if ckpt is None:
            return None
        checkpoint.restore(ckpt, self.model, self.optimizer, self.scheduler)
        self.step_count = ckpt.step
        self.policy_version = ckpt.policy_version
        self.published_step = ckpt.published_step
        self.offsets = ckpt.offsets
        self.kl_coef.load_state_dict(ckpt.kl_controller)
        return ckpt
