"""The generator service against the real broker: publishing, hot-swap, pacing, back-pressure."""

from __future__ import annotations

from collections import defaultdict

import fastavro
import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM

from producers.generator.backends.ct2 import CTranslate2Backend
from producers.generator.backends.hf import TransformersBackend
from producers.generator.service import GeneratorService
from schemas.codec import CODEC
from tests.foundation.samples import SAMPLES
from tests.generator_service.helpers import BUGGY, make_task, read_topic

pytestmark = pytest.mark.kafka


# Largest |behaviour - learner| logprob gap per backend on the tiny model, both in float32:
# transformers is the reference; ctranslate2's own kernels differ in the last digits.
LOGPROB_TOLERANCE = {"transformers": 1e-4, "ctranslate2": 1e-3}


@pytest.fixture(params=["transformers", "ctranslate2"])
def service_for(request, tiny_dir, kafka_bootstrap, tmp_path):
    """Builds a GeneratorService on a fresh tiny backend (each CPU engine in turn); closes
    them all after the test. `service_for.tolerance` is that engine's logprob tolerance."""
    made = []

    def backend():
        if request.param == "ctranslate2":
            return CTranslate2Backend(tiny_dir, compute_type="float32", cache_dir=tmp_path / "ct2")
        return TransformersBackend(tiny_dir, device="cpu")

    def make(cfg) -> GeneratorService:
        service = GeneratorService(cfg, backend(), bootstrap=kafka_bootstrap)
        made.append(service)
        return service

    make.tolerance = LOGPROB_TOLERANCE[request.param]
    yield make
    for service in made:
        service.close()


def publish_tasks(publish, topic: str, tasks: list[dict]) -> None:
    for task in tasks:
        publish(topic, task["task_id"], "Task", task)


def rollouts_of(cfg, bootstrap: str, expected: int) -> list:
    events = read_topic(cfg.topics.rollouts, bootstrap, expected)
    assert len(events) == expected
    return events


def by_group(events) -> dict[str, list]:
    groups = defaultdict(list)
    for event in events:
        groups[event.record["group_id"]].append(event)
    return groups


def recomputed_logprobs(model, prompt: list[int], completion: list[int], temperature: float) -> torch.Tensor:
    """The learner's view: one plain forward pass, log_softmax(logits / T) at the sampled tokens."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
    return torch.log_softmax(logits / temperature, dim=-1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)


def max_gap(model, events, temperature: float) -> float:
    return max(
        (
            recomputed_logprobs(model, e.record["prompt_token_ids"], e.record["completion_token_ids"], temperature)
            - torch.tensor(e.record["behaviour_logprobs"])
        )
        .abs()
        .max()
        .item()
        for e in events
    )


def test_n_tasks_in_give_n_times_k_rollouts_keyed_by_group(run_config, service_for, publish, kafka_bootstrap):
    cfg = run_config(max_groups=3, group_size=2)
    train = [make_task(f"t{i}", buggy_code=BUGGY[i]) for i in range(3)]
    publish_tasks(publish, cfg.topics.tasks, train + [make_task("held", split="heldout")])
    state = service_for(cfg).run()
    assert (state.groups, state.rollouts, state.stopped) == (3, 6, "max_groups")

    events = rollouts_of(cfg, kafka_bootstrap, 6)
    groups = by_group(events)
    assert len(groups) == 3
    schema = CODEC.schema("Rollout")
    for group_id, members in groups.items():
        assert {e.key.decode() for e in members} == {group_id}
        assert len({e.partition for e in members}) == 1  # a group never spans partitions
        assert sorted(e.record["sample_index"] for e in members) == [0, 1]
        assert {e.record["rollout_id"] for e in members} == {f"{group_id}-0", f"{group_id}-1"}
        assert len({e.record["task_id"] for e in members}) == 1
    for event in events:
        r = event.record
        assert event.payload == "Rollout" and fastavro.validate(r, schema, raise_errors=False)
        assert r["task_id"] in {"t0", "t1", "t2"}  # the heldout task is never scheduled
        assert len(r["behaviour_logprobs"]) == len(r["completion_token_ids"]) > 0
        assert (r["group_size"], r["policy_version"], r["generator_id"]) == (2, 0, "gen-test")
        assert (r["max_new_tokens"], r["temperature"]) == (8, 1.0)


def save_random_lora(base_dir, out_dir) -> None:
    """A LoRA with non-zero B (peft initialises B to zero, which would change nothing)."""
    torch.manual_seed(5)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base_dir),
        LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"]),
    )
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    model.save_pretrained(out_dir)


def test_new_policy_is_hot_swapped_between_batches(
    run_config, service_for, publish, kafka_bootstrap, tiny_dir, tmp_path
):
    # G=1, lag=1: version 0 admits 1 * (0 + 1 + 1) = 2 groups, version 2 admits 4.
    temperature = 0.8
    cfg = run_config(max_groups=4, groups_per_step=1, groups_per_batch=1, max_policy_lag=1, temperature=temperature)
    publish_tasks(publish, cfg.topics.tasks, [make_task("t0"), make_task("t1", buggy_code=BUGGY[1])])
    service = service_for(cfg)
    first = service.run()
    assert (first.groups, first.stopped, first.waiting) == (2, "idle", "pacing")

    adapter = tmp_path / "adapter-v2"
    save_random_lora(tiny_dir, adapter)
    publish(
        cfg.topics.policy,
        "2",
        "PolicyVersion",
        {
            "version": 2,
            "learner_step": 2,
            "location": str(adapter),
            "sha256": "0" * 64,
            "base_model": str(tiny_dir),
            "config_id": "test",
        },
    )
    assert first.swap_s == 0.0
    second = service.run()
    assert (second.groups, second.stopped, second.policy_version) == (4, "max_groups", 2)
    assert second.swap_s > 0  # the swap's time is counted (and sent as the metric swap_s)

    events = rollouts_of(cfg, kafka_bootstrap, 8)
    old = [e for e in events if e.record["policy_version"] == 0]
    new = [e for e in events if e.record["policy_version"] == 2]
    assert (len(old), len(new)) == (4, 4)
    base = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    adapted = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), adapter).eval()
    assert max_gap(base, old, temperature) < service_for.tolerance
    assert max_gap(adapted, new, temperature) < service_for.tolerance
    assert max_gap(base, new, temperature) > 1e-2  # the new samples really came from other weights


def test_pacing_waits_at_the_bound_until_a_new_version(run_config, service_for, publish, kafka_bootstrap, tiny_dir):
    # G=2, lag=1: version 0 admits 2 * (0 + 1 + 1) = 4 groups; version 1 admits 6.
    cfg = run_config(max_groups=10, groups_per_step=2, groups_per_batch=3, max_policy_lag=1)
    publish_tasks(publish, cfg.topics.tasks, [make_task("t0")])
    service = service_for(cfg)
    first = service.run()
    assert (first.groups, first.stopped, first.waiting) == (4, "idle", "pacing")
    assert first.idle_s > 0

    metrics = [e.record for e in read_topic(cfg.topics.metrics, kafka_bootstrap, 3)]
    waiting = [m for m in metrics if m["labels"]["waiting"] == "pacing"]
    assert waiting and all(m["source"] == "generator" and m["values"]["groups"] == 4 for m in waiting)
    assert waiting[-1]["values"]["idle_s"] > 0 and waiting[-1]["values"]["policy_version"] == 0

    # A full model directory is a policy too (a merged checkpoint); here the same weights.
    publish(
        cfg.topics.policy,
        "1",
        "PolicyVersion",
        {"version": 1, "learner_step": 1, "location": str(tiny_dir), "sha256": "0" * 64, "base_model": str(tiny_dir)},
    )
    second = service.run()
    assert (second.groups, second.stopped, second.waiting, second.policy_version) == (6, "idle", "pacing", 1)
    versions = sorted(e.record["policy_version"] for e in rollouts_of(cfg, kafka_bootstrap, 12))
    assert versions == [0] * 8 + [1] * 4


def advantage_for(rollout: dict) -> dict:
    """A valid Advantage record that scores `rollout` (only group_id matters to the generator)."""
    keys = ("rollout_id", "group_id", "task_id", "sample_index", "group_size", "policy_version",
            "prompt_token_ids", "completion_token_ids", "behaviour_logprobs", "finish_reason")
    return {**SAMPLES["Advantage"], "config_id": "test", **{k: rollout[k] for k in keys}}


def test_back_pressure_waits_for_scores(run_config, service_for, publish, kafka_bootstrap):
    cfg = run_config(max_groups=5, groups_per_step=100, groups_per_batch=2, max_inflight_groups=3)
    publish_tasks(publish, cfg.topics.tasks, [make_task("t0")])
    service = service_for(cfg)
    first = service.run()
    assert (first.groups, first.stopped, first.waiting, first.inflight) == (3, "idle", "backpressure", 3)

    groups = by_group(rollouts_of(cfg, kafka_bootstrap, 6))
    for group_id in list(groups)[:2]:
        for event in groups[group_id]:
            publish(cfg.scored_topic, group_id, "Advantage", advantage_for(event.record))
    second = service.run()
    assert (second.groups, second.stopped) == (5, "max_groups")
    assert second.inflight == 3  # two scored, two more made: back at the cap


def test_a_restarted_generator_counts_its_cap_over_the_whole_run(run_config, tiny_dir, publish, kafka_bootstrap):
    cfg = run_config(max_groups=3, group_size=2, groups_per_step=100, groups_per_batch=1)
    publish_tasks(publish, cfg.topics.tasks, [make_task("t0")])
    first = GeneratorService(cfg, TransformersBackend(tiny_dir, device="cpu"), bootstrap=kafka_bootstrap)
    state = first.run(should_stop=lambda: first.state.groups >= 2)  # cut after 2 of its 3 groups
    first.close()
    assert (state.groups, state.stopped) == (2, "stopped")

    again = GeneratorService(cfg, TransformersBackend(tiny_dir, device="cpu"), bootstrap=kafka_bootstrap)
    try:
        state = again.run()
    finally:
        again.close()
    assert (state.groups, state.rollouts, state.stopped) == (3, 2, "max_groups")  # one more group, not three
    assert len(read_topic(cfg.topics.rollouts, kafka_bootstrap, 7, timeout_s=3.0)) == 6


@pytest.mark.parametrize("include", [False, True])
def test_the_visible_test_and_its_error_reach_the_prompt_only_when_asked(
    run_config, tiny_dir, publish, kafka_bootstrap, include
):
    from transformers import AutoTokenizer

    from schemas.prompt import render_task_prompt

    cfg = run_config(max_groups=1, group_size=1, include_error_context=include)
    task = {**make_task("ctx"), "tests": ["assert f() == 1"], "visible_tests": ["assert f() + 0 == 1"],
            "error_context": "expected 1, got -1"}
    publish_tasks(publish, cfg.topics.tasks, [task])
    service = GeneratorService(cfg, TransformersBackend(tiny_dir, device="cpu"), bootstrap=kafka_bootstrap)
    try:
        service.run()
    finally:
        service.close()
    (event,) = rollouts_of(cfg, kafka_bootstrap, 1)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    assert event.record["prompt_token_ids"] == render_task_prompt(tokenizer, task, include)
    prompt = tokenizer.decode(event.record["prompt_token_ids"])
    assert ("assert f() + 0 == 1" in prompt and "expected 1, got -1" in prompt) is include
