import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from schemas.codec import decode, encode
from streams.reshaping import (
    InvalidFeedbackError,
    ReshapeState,
    StateMismatchError,
    config_from_dict,
    load_preset,
    reshape_group,
)
from streams.reshaping.stats import RunningStats
from tests.reshaping.feedback_factory import make_feedback, make_group

ADVANTAGE_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "advantage.avsc"
ADVANTAGE_FIELDS = [f["name"] for f in json.loads(ADVANTAGE_SCHEMA.read_text())["fields"]]
SQRT_0125 = math.sqrt(0.125)


def test_raw_preset_gives_plain_group_normalised_advantages():
    records, state = reshape_group(make_group([0.0, 0.5, 1.0, 0.5]), ReshapeState(), load_preset("raw"), step=0)
    expected = [-0.5 / (SQRT_0125 + 1e-6), 0.0, 0.5 / (SQRT_0125 + 1e-6), 0.0]  # (R - 0.5) / (0.35355 + eps)
    assert [r["advantage"] for r in records] == pytest.approx(expected, rel=1e-15, abs=0)
    assert [r["reward_normalised"] for r in records] == [r["advantage"] for r in records]
    assert [r["reward_enhanced"] for r in records] == [0.0, 0.5, 1.0, 0.5]
    assert [r["reward_raw"] for r in records] == [0.0, 0.5, 1.0, 0.5]
    r0 = records[0]
    assert (r0["group_mean"], r0["group_std"]) == (0.5, SQRT_0125)
    assert r0["weights"] == {"test": 1.0, "precision": 0.0, "style": 0.0, "hack": 0.0, "progress": 0.0,
                             "robust": 0.0, "exec": 0.0}
    assert r0["components"]["test"] == 0.0 and set(r0["components"]) == set(r0["weights"])
    assert not r0["warmup"]
    assert (r0["global_count"], r0["global_mean"]) == (4, 0.5)
    assert r0["ema_baseline"] == 0.5  # the first group initialises the baseline
    assert state.groups == 1 and state.config_id == load_preset("raw").config_id


def test_records_have_exactly_the_advantage_fields_and_encode():
    cfg = load_preset("full")
    feedbacks = make_group([0.0, 1.0], hack_flags=["process_exit"])
    records, _ = reshape_group(feedbacks, ReshapeState(), cfg, step=3)
    for fb, rec in zip(feedbacks, records):
        assert set(rec) == set(ADVANTAGE_FIELDS) - {"event_id", "created_at_ms"}
        assert rec["feedback_event_id"] == fb["event_id"] and rec["rollout_id"] == fb["rollout_id"]
        assert rec["config_id"] == cfg.config_id and rec["hack_flags"] == ["process_exit"]
        assert rec["behaviour_logprobs"] == fb["behaviour_logprobs"]
        framed = encode("Advantage", {"event_id": "e1", "created_at_ms": 5, **rec})
        assert decode(framed)["advantage"] == pytest.approx(rec["advantage"], rel=1e-6)


def test_group_members_and_completeness():
    cfg = load_preset("raw")
    partial, _ = reshape_group(make_group([0.0, 1.0, 0.5], group_size=4), ReshapeState(), cfg, step=0)
    assert {(r["group_size"], r["group_members"], r["group_complete"]) for r in partial} == {(4, 3, False)}
    full, _ = reshape_group(make_group([0.0, 1.0, 0.5, 0.5]), ReshapeState(), cfg, step=0)
    assert {(r["group_members"], r["group_complete"]) for r in full} == {(4, True)}
    single, state = reshape_group(make_group([0.75]), ReshapeState(), cfg, step=0)
    # one member cannot be compared (min_comparable 2): marked, no statistic moves
    assert single[0]["advantage"] == 0.0 and single[0]["group_complete"] and single[0]["excluded"]
    assert state.stats["reward_enhanced"].count == 0 and state.groups == 1 and state.compared == 0
    assert single[0]["ema_baseline"] == 0.0 and single[0]["global_count"] == 0  # nothing compared yet
    decode(encode("Advantage", {"event_id": "e1", "created_at_ms": 5, **single[0]}))


def _with_failure(group, index, failure=True):
    return [{**fb, "environment_failure": failure, "evaluation_attempts": 3} if fb["sample_index"] == index else fb
            for fb in group]


@pytest.mark.parametrize("preset", ["raw", "full"])
def test_an_environment_failure_is_left_out_and_the_rest_compared_as_a_smaller_group(preset):
    cfg = load_preset(preset)
    prior = reshape_group(make_group([0.0, 1.0, 0.5], group_id="p"), ReshapeState(), cfg, step=0)[1]
    group = _with_failure(make_group([0.0, 1.0, 0.25, 0.5], policy_version=7), index=1)
    records, state = reshape_group(group, prior, cfg, step=1)
    rest = [fb for fb in group if fb["sample_index"] != 1]
    alone, alone_state = reshape_group(rest, prior, cfg, step=1)
    failed = records[1]
    assert failed["excluded"] and failed["advantage"] == 0.0 and failed["reward_normalised"] == 0.0
    kept = [r for r in records if not r["excluded"]]
    assert [r["rollout_id"] for r in kept] == [r["rollout_id"] for r in alone]
    for name in ("advantage", "reward_normalised", "reward_enhanced", "group_mean", "group_std", "warmup",
                 "global_count", "global_mean", "ema_baseline", "norm_centre", "norm_scale"):
        assert [r[name] for r in kept] == [r[name] for r in alone], name
    assert any(r["advantage"] != 0.0 for r in kept)
    # the failure entered no statistic: the state is the one of the group of three
    assert state.stats == alone_state.stats and state.baseline == alone_state.baseline
    assert state.patterns == alone_state.patterns
    # the group still says how many members it had, so the learner knows when it is whole
    assert {r["group_members"] for r in records} == {4}


def test_environment_failures_are_scored_when_governance_is_off():
    cfg = config_from_dict({"governance": {"exclude_environment_failures": False}})
    group = _with_failure(make_group([0.0, 1.0, 0.25, 0.5]), index=0)
    records, _ = reshape_group(group, ReshapeState(), cfg, step=0)
    plain, _ = reshape_group(make_group([0.0, 1.0, 0.25, 0.5]), ReshapeState(), cfg, step=0)
    assert not any(r["excluded"] for r in records)
    assert [r["advantage"] for r in records] == [r["advantage"] for r in plain]


def test_a_group_with_too_few_comparable_members_gives_no_advantage():
    cfg = config_from_dict({"governance": {"min_comparable": 3}})
    before = reshape_group(make_group([0.0, 1.0], group_id="p"), ReshapeState(),
                           config_from_dict({"governance": {"min_comparable": 2}}), step=0)[1]
    before = replace(before, config_id=cfg.config_id)
    group = _with_failure(_with_failure(make_group([0.0, 1.0, 0.25, 0.5]), index=0), index=3)
    records, after = reshape_group(group, before, cfg, step=1)
    assert all(r["excluded"] and r["advantage"] == 0.0 for r in records)  # 2 comparable < 3
    assert [r["reward_raw"] for r in records] == [0.0, 1.0, 0.25, 0.5]  # still reported
    assert (after.stats, after.baseline, after.patterns, after.compared) == \
        (before.stats, before.baseline, before.patterns, before.compared)
    assert after.groups == before.groups + 1
    enough, _ = reshape_group(_with_failure(make_group([0.0, 1.0, 0.25, 0.5]), index=0), before, cfg, step=1)
    assert [r["excluded"] for r in enough] == [True, False, False, False]


def test_full_preset_components_by_hand():
    cfg = load_preset("full")  # median repeats, lambda 3, gate r_test, ramp 0.1 -> 0.3 over 200 versions
    fb = make_feedback(0, [1.0, 1.0, 0.0], group_size=2, policy_version=100, tree_edit_distance=0.2,
                       adversarial_checked=8, adversarial_mismatches=2, rename_checked=True, rename_passed=True,
                       exec_line_coverage=0.5)
    other = make_feedback(
        1,
        [0.0],
        group_size=2,
        policy_version=100,
        style_class="logical",
        hack_flags=["except_pass", "catch_all_except"],
        tree_edit_distance=0.6,
        adversarial_checked=8,
        exec_line_coverage=0.75,
    )
    records, _ = reshape_group([fb, other], ReshapeState(), cfg, step=0)
    a, b = records
    (wa, ca), (wb, cb) = (a["weights"], a["components"]), (b["weights"], b["components"])
    assert wa["precision"] == pytest.approx(0.2) and wa["style"] == pytest.approx(0.2)  # halfway
    assert wa["progress"] == pytest.approx(0.125)  # 0.2 -> 0.05, halfway
    assert (wa["test"], wa["hack"], wa["robust"], wa["exec"]) == (1.0, 1.0, 0.3, 0.05) and wa == wb
    assert a["reward_raw"] == pytest.approx(2 / 3) and ca["test"] == 1.0
    assert ca["precision"] == pytest.approx(math.exp(-0.6))
    assert (ca["style"], ca["hack"], ca["progress"]) == (0.05, 0.0, 0.0)
    assert ca["robust"] == pytest.approx(1.0 * (0.75 + 1.0) / 2)  # median pass 1 x mean(6/8 agree, renamed ok)
    assert ca["exec"] == pytest.approx(0.5 / 4)  # coverage / tests_total
    assert a["reward_enhanced"] == pytest.approx(
        1.0 + 0.2 * math.exp(-0.6) + 0.2 * 0.05 + 0.3 * 0.875 + 0.05 * 0.125)
    assert cb["precision"] == 0.0  # gated by r_test = 0
    assert cb["style"] == -0.2 and cb["hack"] == pytest.approx(-1.0 - 1.0)  # hacks no longer inside R_style
    assert (cb["robust"], cb["exec"]) == (0.0, 0.0)  # agrees with the reference on all 8, but passes no test
    assert b["reward_enhanced"] == pytest.approx(0.2 * -0.2 + 1.0 * -2.0)
    assert a["warmup"] and a["global_count"] == 2  # far fewer than 64 rewards seen
    assert -5.0 <= b["advantage"] < 0.0 < a["advantage"] <= 5.0


def test_schedule_clock_policy_version_or_step():
    ramp = {"weights": {"schedule": "linear", "ramp_steps": 10, "style": 0.0, "end": {"style": 1.0}}}
    by_version = config_from_dict(ramp)
    by_step = config_from_dict({"weights": {**ramp["weights"], "clock": "step"}})
    group = make_group([0.0, 1.0], policy_version=5)
    assert reshape_group(group, ReshapeState(), by_version, step=0)[0][0]["weights"]["style"] == 0.5
    assert reshape_group(group, ReshapeState(), by_step, step=2)[0][0]["weights"]["style"] == pytest.approx(0.2)


def test_state_carries_global_stats_and_ema():
    cfg = load_preset("raw")
    _, s1 = reshape_group(make_group([0.0, 1.0], group_id="a"), ReshapeState(), cfg, step=0)
    records, s2 = reshape_group(make_group([1.0, 1.0], group_id="b"), s1, cfg, step=1)
    assert s2.baseline.value == pytest.approx(0.9 * 0.5 + 0.1 * 1.0)
    assert s2.stats["reward_enhanced"] == RunningStats().update_many([0.0, 1.0, 1.0, 1.0])
    assert records[0]["global_count"] == 4 and records[0]["global_mean"] == 0.75
    assert records[0]["global_std"] == pytest.approx(math.sqrt(0.1875))
    assert records[0]["advantage"] == 0.0  # zero-variance group, no warm-up in raw
    assert s2.groups == 2


def test_deterministic_order_independent_and_replayable_from_serialised_state():
    cfg = load_preset("full")
    groups = [
        make_group([0.0, 0.25, 1.0, 0.5], group_id=f"g{k}", policy_version=k, tree_edit_distance=0.1 * k)
        for k in range(5)
    ]
    state, outputs = ReshapeState(), []
    for k, group in enumerate(groups):
        records, state = reshape_group(group, state, cfg, step=k)
        outputs.append(records)
    # same inputs, same state: identical output
    again, again_outputs = ReshapeState(), []
    for k, group in enumerate(groups):
        records, again = reshape_group(group, again, cfg, step=k)
        again_outputs.append(records)
    assert again_outputs == outputs and again == state
    # members arriving in another order: same record per rollout, returned in input order
    mid = ReshapeState()
    for k in range(2):
        _, mid = reshape_group(groups[k], mid, cfg, step=k)
    shuffled = [groups[2][i] for i in (2, 0, 3, 1)]
    records, after = reshape_group(shuffled, mid, cfg, step=2)
    assert [r["rollout_id"] for r in records] == [fb["rollout_id"] for fb in shuffled]
    assert sorted(records, key=lambda r: r["sample_index"]) == outputs[2]
    # a state checkpointed as JSON resumes exactly
    restored = ReshapeState.from_dict(json.loads(json.dumps(mid.to_dict())))
    assert restored == mid
    assert reshape_group(groups[2], restored, cfg, step=2)[0] == outputs[2]


def _fix(i, group_id, **kw):
    return make_feedback(i, [1.0, 1.0], group_id=group_id, fixed_pattern="off_by_one", **kw)


def _fail(i, group_id, **kw):
    return make_feedback(i, [0.25, 0.0], group_id=group_id, **kw)


def test_progress_bonus_paid_once_until_failures_accumulate_again():
    # groups of one are compared here (min_comparable 1), so their outcomes enter the history
    cfg = config_from_dict({"progress": {"bonus": 0.5, "window_kind": "events", "window": 10, "min_failures": 3},
                            "governance": {"min_comparable": 1}})
    state = ReshapeState()
    _, state = reshape_group([_fail(i, "a", group_size=3) for i in range(3)], state, cfg, step=0)
    # fixer + non-fixer in one group: only the fix is paid, both fixers of a group are paid alike
    records, state = reshape_group(
        [_fix(0, "b", group_size=3), _fail(1, "b", group_size=3), _fix(2, "b", group_size=3)], state, cfg, step=1
    )
    assert [r["components"]["progress"] for r in records] == [0.5, 0.0, 0.5]
    outcomes = [fixed for _, fixed in state.patterns["off_by_one"].outcomes]
    assert outcomes == [False, False, False, False, True, True]
    # the failure of group b was recorded before its fixes: the pattern is not failing any more
    records, state = reshape_group([_fix(0, "c", group_size=1)], state, cfg, step=2)
    assert records[0]["components"]["progress"] == 0.0
    _, state = reshape_group([_fail(i, "d", group_size=2) for i in range(2)], state, cfg, step=3)
    records, state = reshape_group([_fix(0, "e", group_size=1)], state, cfg, step=4)
    assert records[0]["components"]["progress"] == 0.0  # only 2 failures since the last fix
    _, state = reshape_group([_fail(0, "f", group_size=1)], state, cfg, step=5)
    records, state = reshape_group([_fix(0, "g", group_size=1)], state, cfg, step=6)
    assert records[0]["components"]["progress"] == 0.0  # the fix in e reset the count
    _, state = reshape_group([_fail(i, "h", group_size=3) for i in range(3)], state, cfg, step=7)
    records, _ = reshape_group([_fix(0, "i", group_size=1)], state, cfg, step=8)
    assert records[0]["components"]["progress"] == 0.5


def test_a_partial_pass_is_not_a_fix():
    cfg = config_from_dict({"progress": {"bonus": 0.5, "window": 10, "min_failures": 1},
                            "governance": {"min_comparable": 1}})
    _, state = reshape_group([_fail(0, "a", group_size=1)], ReshapeState(), cfg, step=0)
    flaky = make_feedback(0, [1.0, 0.75], group_id="b", group_size=1, fixed_pattern="off_by_one")
    records, _ = reshape_group([flaky], state, cfg, step=1)
    assert records[0]["components"]["progress"] == 0.0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"pass_fraction_runs": [1.0, math.nan]}, "pass_fraction_runs[1]"),
        ({"pass_fraction_runs": [math.inf]}, "pass_fraction_runs[0]"),
        ({"pass_fraction_runs": [1.25]}, "pass_fraction_runs[0]"),
        ({"pass_fraction_runs": []}, "pass_fraction_runs"),
        ({"tree_edit_distance": math.nan}, "tree_edit_distance"),
        ({"tree_edit_distance": -math.inf}, "tree_edit_distance"),
        ({"tree_edit_distance": "0.2"}, "tree_edit_distance"),
        ({"behaviour_logprobs": [-0.1, -math.inf]}, "behaviour_logprobs[1]"),
        ({"style_class": "pretty"}, "style_class"),
        ({"group_size": 0}, "group_size"),
        ({"sample_index": None}, "sample_index"),
        ({"policy_version": 1.5}, "policy_version"),
        ({"hack_flags": "process_exit"}, "hack_flags"),
    ],
)
def test_bad_feedback_is_rejected_naming_rollout_and_field(overrides, field):
    group = make_group([0.0, 1.0])
    group[1].update(overrides)
    with pytest.raises(InvalidFeedbackError) as info:
        reshape_group(group, ReshapeState(), load_preset("full"), step=0)
    assert info.value.field == field and info.value.rollout_id == "g1-r1"
    assert "g1-r1" in str(info.value) and field in str(info.value)


@pytest.mark.parametrize("overrides", [
    {"pass_fraction_runs": [1, 0]}, {"tree_edit_distance": 0}, {"hack_flags": ("swallowed_exception",)},
    {"behaviour_logprobs": [-1, -0.5]}, {"behaviour_logprobs": []},
])
def test_unusual_but_valid_feedback_is_accepted(overrides):
    """Values the quick check leaves to the field-by-field one (ints for floats, a tuple) pass."""
    group = make_group([0.0, 1.0])
    group[1].update(overrides)
    records, _ = reshape_group(group, ReshapeState(), load_preset("full"), step=0)
    assert len(records) == 2


@pytest.mark.parametrize(("overrides", "field"), [
    ({"behaviour_logprobs": [True]}, "behaviour_logprobs[0]"),
    ({"sample_index": True}, "sample_index"),
    ({"pass_fraction_runs": (1.0,)}, None),
])
def test_bools_are_not_numbers_and_tuples_of_runs_pass(overrides, field):
    group = make_group([0.0, 1.0])
    group[1].update(overrides)
    if field is None:
        assert len(reshape_group(group, ReshapeState(), load_preset("full"), step=0)[0]) == 2
        return
    with pytest.raises(InvalidFeedbackError) as info:
        reshape_group(group, ReshapeState(), load_preset("full"), step=0)
    assert info.value.field == field


def test_missing_field_and_bad_groups_are_rejected():
    cfg, state = load_preset("raw"), ReshapeState()
    group = make_group([0.0, 1.0])
    del group[0]["tree_edit_distance"]
    with pytest.raises(InvalidFeedbackError, match="tree_edit_distance.*missing"):
        reshape_group(group, state, cfg, step=0)
    mixed = make_group([0.0, 1.0])
    mixed[1]["group_id"] = "other"
    with pytest.raises(InvalidFeedbackError, match="group_id"):
        reshape_group(mixed, state, cfg, step=0)
    twice = make_group([0.0, 1.0])
    twice[1]["rollout_id"] = twice[0]["rollout_id"]
    with pytest.raises(InvalidFeedbackError, match="twice"):
        reshape_group(twice, state, cfg, step=0)
    with pytest.raises(InvalidFeedbackError, match="exceed"):
        reshape_group(make_group([0.0, 1.0, 1.0], group_size=2), state, cfg, step=0)
    with pytest.raises(InvalidFeedbackError, match="empty"):
        reshape_group([], state, cfg, step=0)


def test_state_of_another_config_is_refused():
    _, state = reshape_group(make_group([0.0, 1.0]), ReshapeState(), load_preset("raw"), step=0)
    with pytest.raises(StateMismatchError):
        reshape_group(make_group([0.0, 1.0]), state, load_preset("full"), step=1)
