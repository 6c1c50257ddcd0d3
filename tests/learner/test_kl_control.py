"""The KL coefficient: PPO's adaptive controller, the beta schedule, when kl_ref is measured."""

import pytest
from pydantic import ValidationError

from learner.config import LearnerConfig
from learner.kl_control import AdaptiveKLController, KLCoefficient, scheduled_beta


def test_controller_raises_beta_while_kl_is_above_target_and_lowers_it_below():
    controller = AdaptiveKLController(value=0.1, target=0.05, horizon=1000)
    values = [controller.update(kl, n_steps=100) for kl in (0.06, 0.08, 0.2, 0.04, 0.01, 0.0)]
    # 0.06 is 20% over target: x(1 + 0.2 * 0.1); 0.08 and 0.2 are clipped to the same +20%
    assert values[0] == pytest.approx(0.1 * 1.02)
    assert values[1] == pytest.approx(0.1 * 1.02**2)
    assert values[2] == pytest.approx(0.1 * 1.02**3)
    # 0.04 is 20% under; 0.01 and 0.0 are clipped to the same -20%
    assert values[3:] == pytest.approx([0.1 * 1.02**3 * 0.98**k for k in (1, 2, 3)])


def test_controller_step_size_scales_with_samples_over_horizon():
    small, large = AdaptiveKLController(0.1, 0.05, 1000), AdaptiveKLController(0.1, 0.05, 1000)
    small.update(0.055, n_steps=10)
    large.update(0.055, n_steps=500)
    assert small.value == pytest.approx(0.1 * (1 + 0.1 * 0.01))
    assert large.value == pytest.approx(0.1 * (1 + 0.1 * 0.5))


def test_controller_settles_where_the_kl_meets_its_target():
    """A scripted policy whose KL to the reference shrinks as beta grows: kl = 0.002 / beta.
    The KL meets the target 0.05 at beta = 0.04; the controller starts 4x too low."""
    controller = AdaptiveKLController(value=0.01, target=0.05, horizon=10_000)
    kls = []
    for _ in range(400):
        kls.append(0.002 / controller.value)
        controller.update(kls[-1], n_steps=1000)
    assert kls[0] == pytest.approx(0.2)
    assert all(later <= earlier * 1.0001 for earlier, later in zip(kls[:60], kls[1:60]))  # falls towards it
    assert controller.value == pytest.approx(0.04, rel=0.01)
    assert kls[-1] == pytest.approx(0.05, rel=0.01)


def test_linear_schedule_moves_from_start_to_end_then_stays():
    values = [scheduled_beta("linear", 0.0, 0.1, 4, step) for step in (0, 1, 2, 4, 9)]
    assert values == pytest.approx([0.0, 0.025, 0.05, 0.1, 0.1])
    assert scheduled_beta("linear", 0.2, 0.05, 3, 2) == pytest.approx(0.1)  # downwards too
    assert scheduled_beta("linear", 0.0, 0.1, 0, 0) == 0.1  # no steps: at the end at once
    assert scheduled_beta("constant", 0.04, 0.5, 10, 5) == 0.04  # beta_end ignored


def test_coefficient_follows_the_configured_schedule():
    coef = KLCoefficient(LearnerConfig(beta=0.01, beta_schedule="linear", beta_end=0.05, beta_schedule_steps=8))
    assert [coef.beta(s) for s in (0, 4, 8, 100)] == pytest.approx([0.01, 0.03, 0.05, 0.05])
    coef.observe(1.0, 64)  # a schedule does not adapt
    assert coef.beta(4) == pytest.approx(0.03) and coef.state_dict() == {}


def test_adaptive_coefficient_adapts_and_its_state_round_trips():
    cfg = LearnerConfig(beta=0.1, adap_kl_ctrl=True, target=0.02, horizon=100)
    coef = KLCoefficient(cfg)
    coef.observe(0.0, n_samples=10)  # far under target: -20% * 10/100
    assert coef.beta(0) == coef.beta(50) == pytest.approx(0.1 * 0.98)
    restored = KLCoefficient(cfg)
    restored.load_state_dict(coef.state_dict())
    assert restored.beta(0) == pytest.approx(0.098)
    fresh = KLCoefficient(cfg)
    fresh.load_state_dict({})  # a checkpoint written without a controller: start value
    assert fresh.beta(0) == 0.1


@pytest.mark.parametrize(
    ("every", "beta", "measured_steps"),
    [(1, 0.0, [0, 1, 2, 3, 4, 5]), (3, 0.0, [0, 3]), (0, 0.0, []), (0, 0.1, [0, 1, 2, 3, 4, 5])],
)
def test_kl_is_measured_every_n_steps_and_on_every_step_that_weighs_it(every, beta, measured_steps):
    coef = KLCoefficient(LearnerConfig(kl_measure_every=every, beta=beta))
    assert [s for s in range(6) if coef.measures(s, coef.beta(s))] == measured_steps


@pytest.mark.parametrize(
    "settings",
    [{"adap_kl_ctrl": True, "beta": 0.0}, {"adap_kl_ctrl": True, "beta": 0.1, "beta_schedule": "linear"},
     {"kl_measure_every": -1}, {"target": 0.0}],
)
def test_inconsistent_kl_settings_are_refused(settings):
    with pytest.raises(ValidationError):
        LearnerConfig(**settings)


def test_trl_ppo_name_of_the_initial_coefficient_is_accepted():
    assert LearnerConfig(init_kl_coef=0.2, adap_kl_ctrl=True).beta == 0.2
