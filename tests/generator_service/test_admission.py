"""Pure rules of the service: admission (pacing, back-pressure, max_groups) and rollout records."""

from __future__ import annotations

import fastavro
import pytest

from infra.platform.topics import Topics
from producers.generator.backends.base import Sample, SamplingParams
from schemas.prompt import PROMPT_TEMPLATE_VERSION
from producers.generator.service import GenerateRunConfig, admission, rollout_records
from producers.generator.share import GroupShare, generator_seed
from schemas.codec import CODEC, decode, encode

LIMITS = dict(groups_per_step=4, max_policy_lag=1, max_inflight_groups=100, groups_per_batch=3)


def test_pacing_bound_is_g_times_version_plus_lag_plus_one():
    # G=4, lag=1: version 0 allows 4 * 2 = 8 groups in total, version 2 allows 16.
    assert admission(0, 0, 0, **LIMITS).groups == 3
    assert admission(6, 0, 0, **LIMITS).groups == 2  # the batch is cut to the bound
    at_bound = admission(8, 0, 0, **LIMITS)
    assert (at_bound.groups, at_bound.reason, at_bound.pacing_bound) == (0, "pacing", 8)
    assert admission(8, 0, 2, **LIMITS).groups == 3
    assert admission(15, 0, 2, **LIMITS).groups == 1


def test_back_pressure_caps_unscored_groups():
    limits = {**LIMITS, "max_inflight_groups": 5}
    assert admission(4, 4, 9, **limits).groups == 1
    blocked = admission(5, 5, 9, **limits)
    assert (blocked.groups, blocked.reason) == (0, "backpressure")
    assert admission(5, 2, 9, **limits).groups == 3


def test_max_groups_stops_admission():
    assert admission(9, 0, 9, **LIMITS, max_groups=10).groups == 1
    assert admission(10, 0, 9, **LIMITS, max_groups=10).reason == "max_groups"


def test_rollout_records_fit_the_schema_and_carry_the_group():
    samples = [
        Sample([5, 6, 2], [-0.5, -1.25, -0.125], "ab", "stop"),
        Sample([7, 8, 9], [-1.0, -2.0, -3.0], "xyz", "length"),
    ]
    params = SamplingParams(n=2, temperature=0.7, top_p=0.9, top_k=50, max_new_tokens=3, seed=11)
    records = rollout_records(
        task_id="t1",
        group_id="g",
        prompt_token_ids=[1, 2, 3],
        samples=samples,
        params=params,
        policy_version=4,
        generator_id="gen-a",
    )
    assert [r["rollout_id"] for r in records] == ["g-0", "g-1"]
    assert [r["sample_index"] for r in records] == [0, 1]
    assert all(r["group_size"] == 2 and r["policy_version"] == 4 and r["sampling_seed"] == 11 for r in records)
    assert records[1]["completion_token_ids"] == [7, 8, 9] and records[1]["finish_reason"] == "length"
    assert records[0]["prompt_template_version"] == PROMPT_TEMPLATE_VERSION
    envelope = {"event_id": "e", "schema_version": 1, "created_at_ms": 0}
    for record in records:
        full = {**envelope, **record}
        assert fastavro.validate(full, CODEC.schema("Rollout"), raise_errors=False)
        assert decode(encode("Rollout", full))["behaviour_logprobs"] == pytest.approx(record["behaviour_logprobs"])


def test_run_config_loads_from_yaml_with_topic_defaults(tmp_path):
    path = tmp_path / "gen.yaml"
    path.write_text(
        "config_id: cfg7\ngroups_per_step: 3\nmax_groups: 12\ngenerator:\n  group_size: 4\n  max_policy_lag: 2\n"
    )
    cfg = GenerateRunConfig.from_yaml(path)
    assert (cfg.groups_per_step, cfg.max_groups, cfg.generator.group_size, cfg.generator.max_policy_lag) == (
        3,
        12,
        4,
        2,
    )
    assert cfg.topics == Topics()  # the default namespace
    assert cfg.scored_topic == Topics().advantages("cfg7")


def test_run_config_rejects_unknown_knobs(tmp_path):
    path = tmp_path / "gen.yaml"
    path.write_text("groups_per_stpe: 3\n")
    with pytest.raises(ValueError):
        GenerateRunConfig.from_yaml(path)


def test_a_finished_run_says_max_groups_even_when_other_limits_bind_too():
    limits = {**LIMITS, "max_inflight_groups": 8}
    assert admission(8, 8, 0, **limits, max_groups=8).reason == "max_groups"


def test_dropped_groups_raise_the_pacing_bound_one_for_one():
    at_bound = admission(8, 0, 0, **LIMITS)
    assert at_bound.groups == 0
    replaced = admission(8, 0, 0, **LIMITS, dropped_groups=2)
    assert (replaced.groups, replaced.pacing_bound) == (2, 10)


def run_admitted(shares: list[GroupShare], version: int, *, dropped: int = 0, max_groups: int | None = None,
                 max_inflight_groups: int = 100) -> list[int]:
    """Groups each generator makes at one policy version when it admits batch after batch
    until told to wait (nothing scored meanwhile)."""
    limits = {**LIMITS, "max_inflight_groups": max_inflight_groups}
    made = []
    for share in shares:
        produced = 0
        while (step := admission(produced, produced, version, **limits, max_groups=max_groups,
                                 dropped_groups=dropped, share=share)).groups:
            produced += step.groups
        made.append(produced)
    return made


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_n_generators_together_admit_what_one_would(n):
    shares = [GroupShare(index=i, of=n) for i in range(n)]
    one = [GroupShare()]
    for version, dropped in ((0, 0), (2, 0), (2, 3), (7, 1)):
        # pacing: G=4, lag 1 -> 4 * (version + 2) + dropped in all, dealt round-robin
        parts = run_admitted(shares, version, dropped=dropped)
        assert sum(parts) == sum(run_admitted(one, version, dropped=dropped)) == 4 * (version + 2) + dropped
        assert max(parts) - min(parts) <= 1
    # the run's budget of groups and its in-flight cap are shared the same way
    assert sum(run_admitted(shares, 50, max_groups=11)) == 11
    assert sum(run_admitted(shares, 50, max_inflight_groups=9)) == 9


def test_a_share_grows_with_its_budget_and_the_parts_sum_to_it():
    for of in range(1, 6):
        for index in range(of):
            share = GroupShare(index=index, of=of)
            parts = [share.part(total) for total in range(40)]
            assert parts == sorted(parts)  # a growing bound never takes a group back
        assert all(sum(GroupShare(index=i, of=of).part(t) for i in range(of)) == t for t in range(40))
    with pytest.raises(ValueError, match="not below"):
        GroupShare(index=2, of=2)


def test_generator_seeds_are_the_run_seed_for_the_first_and_distinct_for_the_others():
    assert generator_seed(7, 0) == 7
    seeds = [generator_seed(7, i) for i in range(8)]
    assert len(set(seeds)) == 8 and all(0 <= s < 2**31 for s in seeds)
    assert generator_seed(7, 1) == generator_seed(7, 1) != generator_seed(8, 1)
