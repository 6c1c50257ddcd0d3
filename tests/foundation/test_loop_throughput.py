"""The run report's throughput figures: first rollout delay and the steady rate after it."""

from infra.compose.report import loop_throughput


def test_the_first_group_marks_the_start_and_is_not_counted():
    # 3 groups of 4 rollouts (100 tokens each): first at 30 s after start, last 60 s later
    speed = loop_throughput(started_ms=0, rollouts=12, groups=3, first_ms=30_000, last_ms=90_000, tokens=1200)
    assert speed["first_rollout_s"] == 30.0
    assert speed["rollouts_per_min"] == 8.0  # the 8 rollouts after the first group, in one minute
    assert speed["tokens_per_s"] == round(800 / 60, 1)


def test_one_group_gives_a_start_but_no_rate():
    speed = loop_throughput(started_ms=1_000, rollouts=4, groups=1, first_ms=5_000, last_ms=5_000, tokens=40)
    assert speed == {"first_rollout_s": 4.0, "rollouts_per_min": 0.0, "tokens_per_s": 0.0}


def test_no_rollouts_no_figures():
    assert loop_throughput(0, 0, 0, None, None, 0)["first_rollout_s"] is None
