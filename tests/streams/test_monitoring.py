import pytest

from streams.agents.monitoring import WindowStats, merge


def adv(raw, reshaped, a, hacks=()):
    return {"reward_raw": raw, "reward_enhanced": reshaped, "advantage": a, "hack_flags": list(hacks),
            "bug_pattern": "operator_swap"}


def test_window_values_hand_computed():
    # group 1: raw all 0 (zero variance before), reshaped spread apart by style
    g1 = [adv(0.0, 0.1, 1.0), adv(0.0, -0.1, -1.0, ["sys_exit"])]
    # group 2: raw 1 and 0; advantages equal (zero variance after)
    g2 = [adv(1.0, 1.0, 0.0), adv(0.0, 0.0, 0.0)]
    w = WindowStats.of_group(g1) + WindowStats.of_group(g2)
    v = w.values()
    assert v["rollouts"] == 4 and v["groups"] == 2
    assert v["reward_raw_mean"] == pytest.approx(0.25)
    assert v["reward_raw_var"] == pytest.approx(0.25 - 0.0625)  # E[x^2] - m^2 = 1/4 - 1/16
    assert v["reward_reshaped_mean"] == pytest.approx(0.25)
    assert v["reward_reshaped_var"] == pytest.approx((0.01 + 0.01 + 1.0) / 4 - 0.0625)
    assert v["advantage_var"] == pytest.approx(0.5)
    assert v["zero_variance_share_raw"] == 0.5 and v["zero_variance_share_reshaped"] == 0.5
    assert v["hack_flag_rate"] == 0.25


def test_merge_adds_to_an_empty_window():
    delta = WindowStats.of_group([adv(1.0, 1.0, 0.5)]).to_dict()
    twice = merge(merge({}, delta), delta)
    assert twice["rollouts"] == 2 and twice["raw_sum"] == 2.0


def test_success_rate_per_pattern_for_the_curriculum():
    def of(pattern, raw):
        return {**adv(raw, raw, 0.0), "bug_pattern": pattern}

    a = WindowStats.of_group([of("operator_swap", 1.0), of("operator_swap", 0.5)])
    b = WindowStats.of_group([of("operator_swap", 1.0), of("wrong_return", 0.0)])
    values = (a + b).values()
    assert values["success_rate/operator_swap"] == 2 / 3
    assert values["success_rate/wrong_return"] == 0.0
    assert WindowStats.from_dict((a + b).to_dict()) == a + b



def test_excluded_records_are_counted_and_left_out_of_the_means():
    g = [adv(1.0, 1.0, 0.7), adv(0.0, 0.0, -0.7), {**adv(0.0, 0.0, 0.0), "excluded": True}]
    not_compared = [{**adv(1.0, 1.0, 0.0, ["sys_exit"]), "excluded": True}]
    v = (WindowStats.of_group(g) + WindowStats.of_group(not_compared)).values()
    assert v["rollouts"] == 4 and v["groups"] == 2
    assert v["excluded_rollouts"] == 2 and v["excluded_groups"] == 1 and v["excluded_share"] == 0.5
    assert v["reward_raw_mean"] == 0.5 and v["advantage_var"] == pytest.approx(0.49)  # the two compared
    assert v["zero_variance_share_raw"] == 0.0  # of the one compared group
    assert v["success_rate/operator_swap"] == 0.5  # an environment failure is not the policy's failure
    assert v["hack_flag_rate"] == 0.25
