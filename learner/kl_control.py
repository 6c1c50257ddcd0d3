"""The KL coefficient of each learner step: a schedule, or PPO's adaptive controller.

Pure arithmetic, no torch. ``KLCoefficient`` answers two questions for the trainer:
which beta the loss of the next step uses, and whether that step measures the KL to the
reference (``kl_ref``); after the step it is told the KL that was measured.

TRL dropped its ``AdaptiveKLController`` (trl.core) together with the old PPO trainer, and
the installed packages carry no other, so the controller is written out here: a few lines,
the update rule of Ziegler et al. (2019), "Fine-Tuning Language Models from Human
Preferences", section 2.2.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

# Ziegler et al. clip the proportional error so that one noisy batch moves beta by at most
# 20% of n_steps / horizon.
PROPORTIONAL_ERROR_CLIP = 0.2


@dataclass
class AdaptiveKLController:
    """beta <- beta * (1 + clip(kl / target - 1, -0.2, 0.2) * n_steps / horizon).

    ``n_steps`` counts samples (completions) trained on since the last update, as in TRL's
    PPO trainer, so ``horizon`` is in samples: at a persistent error of 20% or more, beta
    changes by a factor of about e^(+-0.2) every ``horizon`` samples.
    """

    value: float
    target: float
    horizon: float

    def update(self, kl: float, n_steps: int) -> float:
        """Move ``value`` after a batch of ``n_steps`` samples whose KL was ``kl``; returns it."""
        error = min(max(kl / self.target - 1.0, -PROPORTIONAL_ERROR_CLIP), PROPORTIONAL_ERROR_CLIP)
        self.value *= 1.0 + error * n_steps / self.horizon
        return self.value


def scheduled_beta(
    schedule: Literal["constant", "linear"], start: float, end: float, steps: int, step: int
) -> float:
    """Beta at optimiser step ``step``: ``start`` throughout (constant), or ``start`` moving
    in a straight line to ``end`` over ``steps`` steps and staying there (linear)."""
    if schedule == "constant":
        return start
    if steps <= 0:
        return end
    progress = min(max(step, 0) / steps, 1.0)
    return start + (end - start) * progress


class KLCoefficient:
    """Beta of each step and when ``kl_ref`` is measured, from the learner's KL settings.

    Read from ``cfg`` (a ``LearnerConfig``): ``beta``, ``beta_schedule``, ``beta_end``,
    ``beta_schedule_steps``, ``adap_kl_ctrl``, ``target``, ``horizon``, ``kl_measure_every``.
    """

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.controller = (
            AdaptiveKLController(cfg.beta, cfg.target, cfg.horizon) if cfg.adap_kl_ctrl else None
        )

    def beta(self, step: int) -> float:
        """The coefficient of the KL term at optimiser step ``step`` (0-based, steps taken so far)."""
        if self.controller is not None:
            return self.controller.value
        c = self.cfg
        return scheduled_beta(c.beta_schedule, c.beta, c.beta_end, c.beta_schedule_steps, step)

    def measures(self, learner_step: int, beta: float) -> bool:
        """Whether learner step ``learner_step`` (0-based) computes ``kl_ref``: always when
        beta > 0 (the loss needs it), else every ``kl_measure_every`` steps, never at 0."""
        every = self.cfg.kl_measure_every
        return beta > 0 or (every > 0 and learner_step % every == 0)

    def observe(self, kl: float, n_samples: int) -> None:
        """After a step that measured ``kl`` on ``n_samples`` completions: adapt beta."""
        if self.controller is not None:
            self.controller.update(kl, n_samples)

    # --- checkpoint -------------------------------------------------------------------
    def state_dict(self) -> dict[str, float]:
        """What a checkpoint must hold to resume the same beta (empty when nothing adapts:
        a schedule is a function of the step, which the checkpoint already holds)."""
        return asdict(self.controller) if self.controller is not None else {}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Restore the adapted beta. Target and horizon stay the config's (a resumed run may
        change them); a checkpoint written without the controller leaves beta at its start."""
        if self.controller is not None and state:
            self.controller.value = float(state["value"])
