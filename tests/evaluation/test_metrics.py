import math

import pytest

from producers.evaluation.metrics import (CandidateOutcome, MetricInputError, correlation, pass_at_k, summarise,
                                          summarise_by_pattern, t_interval, t_quantile_975)


def test_pass_at_k_hand_computed():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 5) == 1.0
    assert pass_at_k(5, 0, 3) == 0.0
    # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)


def test_pass_at_k_is_stable_for_large_n():
    # 1 - C(900, 10)/C(1000, 10), computed here with exact integers
    exact = 1 - math.comb(900, 10) / math.comb(1000, 10)
    assert pass_at_k(1000, 100, 10) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (3, 4, 1), (3, 1, 4), (3, 1, 0)])
def test_pass_at_k_refuses_bad_counts(n, c, k):
    with pytest.raises(MetricInputError):
        pass_at_k(n, c, k)


def _o(task, pattern, greedy, passed, ted=0.1, style="clean", flags=()):
    return CandidateOutcome(task, pattern, greedy, passed, 1.0 if passed else 0.0, ted, style, tuple(flags))


def test_summarise_and_per_pattern():
    outcomes = [
        # task a (off_by_one): greedy fixes it; 2 of 4 samples fix it, one of those flagged
        _o("a", "off_by_one", True, True, ted=0.2),
        _o("a", "off_by_one", False, True, ted=0.4, flags=("except_pass",)),
        _o("a", "off_by_one", False, True, ted=0.2),
        _o("a", "off_by_one", False, False, style="logical"),
        _o("a", "off_by_one", False, False, style="logical"),
        # task b (operator_swap): nothing passes
        _o("b", "operator_swap", True, False, style="autofix"),
        *[_o("b", "operator_swap", False, False) for _ in range(4)],
    ]
    m = summarise(outcomes, [1, 4])
    assert m.tasks == 2 and m.candidates == 10
    assert m.success_at_1 == pytest.approx(0.5)
    assert m.pass_at_k[1] == pytest.approx((0.5 + 0.0) / 2)
    assert m.pass_at_k[4] == pytest.approx((1.0 + 0.0) / 2)
    assert m.mean_pass_fraction == pytest.approx(3 / 10)
    assert m.mean_tree_edit_distance_success == pytest.approx((0.2 + 0.4 + 0.2) / 3)
    assert m.style_clean_share == pytest.approx(7 / 10)
    assert m.hack_share == pytest.approx(1 / 10)
    assert m.hacked_success_share == pytest.approx(1 / 3)

    per = summarise_by_pattern(outcomes, [1, 4])
    assert list(per) == ["off_by_one", "operator_swap"]
    assert per["off_by_one"].success_at_1 == 1.0 and per["off_by_one"].pass_at_k[1] == pytest.approx(0.5)
    assert per["operator_swap"].success_at_1 == 0.0
    assert per["operator_swap"].mean_tree_edit_distance_success is None
    assert per["operator_swap"].hacked_success_share is None


def test_summarise_refuses_k_above_samples():
    with pytest.raises(MetricInputError):
        summarise([_o("a", "p", False, True), _o("a", "p", False, False)], [3])


def test_t_interval_hand_computed():
    # mean 2, sample std 1, n 3: half width 4.303 * 1 / sqrt(3)
    iv = t_interval([1.0, 2.0, 3.0])
    assert iv.mean == pytest.approx(2.0)
    assert iv.half_width == pytest.approx(4.303 / math.sqrt(3))
    one = t_interval([0.25])
    assert one.half_width is None and one.n == 1 and "n=1" in str(one)


def test_t_quantile_beyond_table_is_close_to_tables():
    assert t_quantile_975(40) == pytest.approx(2.021, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.980, abs=1e-3)


def test_correlation():
    assert correlation([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert correlation([1, 1, 1], [0, 1, 2]) is None


def test_mcnemar_exact_known_values():
    from producers.evaluation.metrics import mcnemar_exact

    # 1 task only arm a solves, 9 only arm b, 5 both, 5 neither: p = 2 * (C(10,0) + C(10,1)) / 2^10
    a = [True] * 1 + [False] * 9 + [True] * 5 + [False] * 5
    b = [False] * 1 + [True] * 9 + [True] * 5 + [False] * 5
    test = mcnemar_exact(a, b)
    assert (test.only_a, test.only_b) == (1, 9)
    assert test.p_value == pytest.approx(22 / 1024)
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0
    assert mcnemar_exact([True] * 3, [False] * 3).p_value == pytest.approx(0.25)  # 2 * 1/8


def test_paired_bootstrap_known_values():
    from producers.evaluation.metrics import paired_bootstrap

    constant = paired_bootstrap([0.0, 0.5, 1.0], [0.2, 0.7, 1.2])
    assert constant.mean == pytest.approx(0.2) and constant.low == pytest.approx(0.2)
    assert constant.high == pytest.approx(0.2)
    # differences {0, 1}: a resampled mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4
    two = paired_bootstrap([0.0, 0.0], [0.0, 1.0])
    assert (two.mean, two.low, two.high) == (0.5, 0.0, 1.0)
    assert paired_bootstrap([0.0, 1.0], [1.0, 0.0], seed=3) == paired_bootstrap([0.0, 1.0], [1.0, 0.0], seed=3)
    with pytest.raises(MetricInputError):
        paired_bootstrap([1.0], [1.0, 2.0])


def test_compare_paired_uses_shared_tasks():
    from producers.evaluation.metrics import compare_paired

    def arm(greedy_passes):
        return [CandidateOutcome(task_id=t, bug_pattern="p", greedy=True, passed=p, pass_fraction=float(p),
                                 tree_edit_distance=0.0, style_class="clean") for t, p in greedy_passes.items()]

    a = arm({"t1": False, "t2": False, "t3": True, "only_a": True})
    b = arm({"t1": True, "t2": True, "t3": True, "only_b": False})
    result = compare_paired(a, b)
    assert result["tasks"] == 3
    assert result["greedy"].mean == pytest.approx(2 / 3)
    assert (result["mcnemar_greedy"].only_a, result["mcnemar_greedy"].only_b) == (0, 2)
    assert result["mcnemar_greedy"].p_value == pytest.approx(0.5)
    assert result["sample_pass_rate"] is None  # greedy only: no sampled repair to compare
    sampled = [CandidateOutcome(task_id=t, bug_pattern="p", greedy=False, passed=True, pass_fraction=1.0,
                                tree_edit_distance=0.0, style_class="clean") for t in ("t1", "t2", "t3")]
    assert compare_paired(a + sampled, b + sampled)["sample_pass_rate"].mean == 0
    assert compare_paired(a + sampled[:2], b + sampled)["sample_pass_rate"] is None  # t3 unsampled in a


def test_holm_adjusts_in_the_input_order_and_stays_monotone():
    from producers.evaluation.metrics import holm_adjust

    # sorted: 0.01 x 4, 0.03 x 3, 0.04 x 2 (raised to the running max 0.09), 0.2 x 1
    assert holm_adjust([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm_adjust([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm_adjust([]) == []
