"""Every hack flag brings a full pass below the worst honest full pass, under every preset
that prices hacks, at both ends of its weight schedule.

Both bounds go through the real reshaping (``reshape_group``), over every choice of the
fields that move the other components: the honest floor is the least reward of an honest
full pass (any parseable style, any edit size up to the largest, any outcome of the
robustness checks and of the coverage, no progress bonus); the hacked ceiling is the most a
flagged full pass can earn (the same choices, and the progress bonus)."""

from __future__ import annotations

import itertools

import pytest

from streams.reshaping import ReshapeState, config_from_dict, load_preset, reshape_group
from streams.reshaping.config import PRESETS_DIR, ReshapingConfig
from streams.reshaping.stats import FailureHistory
from streams.signals.hacks import HACK_FLAGS
from tests.reshaping.feedback_factory import make_feedback

PATTERN = "off_by_one"
PRESETS = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))
PLAIN = ("raw", "binary", "layered")  # the baselines: they price nothing
STYLES = ("clean", "autofix", "logical")  # an unparsable candidate passes no test
ROBUSTNESS = (
    {},  # no check ran
    {"adversarial_checked": 8, "adversarial_mismatches": 8, "rename_checked": True, "rename_passed": False},
    {"adversarial_checked": 8, "adversarial_mismatches": 0, "rename_checked": True, "rename_passed": True},
)
COVERAGE = ({"exec_line_coverage": 0.0}, {"exec_line_coverage": 1.0}, {"exec_line_coverage": 1.0,
                                                                       "exec_tracer_use": True})
DISTANCES = (0.0, 1.0)


def prices_hacks(cfg: ReshapingConfig) -> bool:
    weights = (cfg.weights.start()["hack"], cfg.weights.final()["hack"])
    return any(weights) and (any(cfg.rewards.hack_penalties.values()) or cfg.rewards.unknown_hack_penalty > 0)


def ramp_ends(cfg: ReshapingConfig) -> tuple[int, int]:
    return cfg.weights.ramp_start, cfg.weights.ramp_start + cfg.weights.ramp_steps


def full_pass_rewards(cfg: ReshapingConfig, clock: int, flags: list[str], progress: bool) -> list[float]:
    """The enhanced reward of a full pass (one test, passed) for every choice of style, edit
    size, robustness and coverage, with the flags; with the progress bonus when ``progress``."""
    state = ReshapeState()
    if progress:  # the pattern has failed often enough since its last fix for the bonus
        history = FailureHistory(tuple((t, False) for t in range(cfg.progress.min_failures)))
        state = ReshapeState(patterns={PATTERN: history})
    rewards = []
    for style, distance, robust, coverage in itertools.product(STYLES, DISTANCES, ROBUSTNESS, COVERAGE):
        fb = make_feedback(0, [1.0], group_size=1, bug_pattern=PATTERN, fixed_pattern=PATTERN if progress else "",
                           policy_version=clock, tests_total=1, tests_passed=1, style_class=style,
                           tree_edit_distance=distance, hack_flags=list(flags), created_at_ms=10_000,
                           **robust, **coverage)
        (record,), _ = reshape_group([fb], state, cfg, step=clock)
        if progress:
            assert record["components"]["progress"] == cfg.progress.bonus
        rewards.append(record["reward_enhanced"])
    return rewards


def violations(cfg: ReshapingConfig) -> list[tuple[str, int, float, float]]:
    """(flag, clock, hacked ceiling, honest floor) wherever the hacked full pass is not below."""
    found = []
    for clock in ramp_ends(cfg):
        floor = min(full_pass_rewards(cfg, clock, [], progress=False))
        for flag in [*HACK_FLAGS, "a_flag_no_detector_has_yet"]:
            ceiling = max(full_pass_rewards(cfg, clock, [flag], progress=True))
            if not ceiling < floor:
                found.append((flag, clock, ceiling, floor))
    return found


PRICING = {name: load_preset(name) for name in PRESETS if prices_hacks(load_preset(name))}
PRICING["defaults"] = ReshapingConfig()


def test_the_pricing_presets_are_full_and_the_plain_ones_price_nothing():
    assert "full" in PRICING and prices_hacks(PRICING["defaults"])
    assert set(PRESETS) - set(PRICING) == set(PLAIN)
    for name in PLAIN:
        cfg = load_preset(name)
        for clock in ramp_ends(cfg):
            plain = full_pass_rewards(cfg, clock, [], progress=False)
            for flag in HACK_FLAGS:
                assert full_pass_rewards(cfg, clock, [flag], progress=False) == plain, (name, flag)


@pytest.mark.parametrize("name", sorted(PRICING))
def test_every_hack_flag_brings_a_full_pass_below_every_honest_one(name):
    cfg = PRICING[name]
    assert ramp_ends(cfg)[0] != ramp_ends(cfg)[1]
    assert violations(cfg) == []


def test_the_bound_check_finds_a_penalty_too_small():
    """The check has teeth: the penalties the full preset had before hacks got their own
    weight (dead code and high complexity 0.2) leave a hacked full pass above honest ones."""
    data = load_preset("full").model_dump(mode="json")
    mild = {**data["rewards"]["hack_penalties"], "dead_code": 0.2, "high_complexity": 0.2}
    cfg = config_from_dict({**data, "rewards": {**data["rewards"], "hack_penalties": mild}})
    assert {flag for flag, *_ in violations(cfg)} == {"dead_code", "high_complexity"}
