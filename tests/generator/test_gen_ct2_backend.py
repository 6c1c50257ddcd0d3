"""The CTranslate2 backend: behaviour logprobs against the transformers forward pass (exact in
float32, within a measured bound in int8), grouping, greedy, and policy hot-swap."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from producers.generator.backends import GenerationBackend, PolicyLoadError, SamplingParams
from producers.generator.backends.ct2 import CTranslate2Backend
from schemas.prompt import render_prompt

BUGGY = ["def add(a, b):\n    return a - b\n", "def is_even(n):\n    return n % 2 == 1\n"]
# Measured on SmolLM2-135M (int8 weights, AVX2): mean |delta logp| per token 0.3-0.45 over
# sampled completions; the bound leaves room for other prompts and seeds.
INT8_MEAN_ABS_BOUND = 0.8


@pytest.fixture(scope="module")
def backend(tiny_dir, tmp_path_factory):
    return CTranslate2Backend(tiny_dir, compute_type="float32", max_batch_sequences=8,
                              cache_dir=tmp_path_factory.mktemp("ct2"))


@pytest.fixture(scope="module")
def tiny_model(tiny_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def prompts(backend):
    ids = [render_prompt(backend.tokenizer, BUGGY[0]), render_prompt(backend.tokenizer, BUGGY[1], "AssertionError")]
    assert len(ids[0]) != len(ids[1])
    return ids


def recomputed(model, prompt: list[int], completion: list[int], temperature: float) -> torch.Tensor:
    """The learner's view: one plain forward pass, log_softmax(logits / T) at the completion."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
    return torch.log_softmax(logits / temperature, dim=-1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)


def gaps(model, prompts, groups, temperature) -> torch.Tensor:
    return torch.cat([
        (recomputed(model, prompt, s.token_ids, temperature) - torch.tensor(s.logprobs)).abs()
        for prompt, group in zip(prompts, groups) for s in group
    ])


def test_backend_satisfies_the_protocol(backend):
    assert isinstance(backend, GenerationBackend)


def test_groups_per_prompt_with_one_logprob_per_token_and_stop_last(backend, prompts):
    groups = backend.generate(prompts, SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=0))
    assert [len(g) for g in groups] == [3, 3]
    for sample in groups[0] + groups[1]:
        assert len(sample.token_ids) == len(sample.logprobs) <= 6
        assert all(lp <= 0.0 for lp in sample.logprobs)
        if sample.finish_reason == "stop":
            assert sample.token_ids[-1] in backend.stop_token_ids
        else:
            assert len(sample.token_ids) == 6 and sample.token_ids[-1] not in backend.stop_token_ids


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_float32_logprobs_are_the_learners_to_float_precision(backend, tiny_model, prompts, temperature):
    groups = backend.generate(prompts, SamplingParams(n=4, temperature=temperature, max_new_tokens=12, seed=1))
    assert gaps(tiny_model, prompts, groups, temperature).max().item() < 1e-3


def test_truncated_sampling_reports_full_vocabulary_logprobs(backend, tiny_model, prompts):
    params = SamplingParams(n=4, temperature=1.0, top_k=5, top_p=0.9, max_new_tokens=8, seed=2)
    groups = backend.generate(prompts, params)
    for prompt, group in zip(prompts, groups):
        for sample in group:
            with torch.no_grad():
                logits = tiny_model(torch.tensor([prompt + sample.token_ids])).logits[0, len(prompt) - 1 : -1]
            rank = (logits > logits.gather(-1, torch.tensor(sample.token_ids)[:, None])).sum(-1)
            assert (rank < 5).all()  # every token came from the top 5
    assert gaps(tiny_model, prompts, groups, 1.0).max().item() < 1e-3


def test_greedy_decodes_once_follows_the_argmax_and_copies(backend, tiny_model, prompts):
    groups = backend.generate(prompts, SamplingParams(n=3, temperature=0.0, max_new_tokens=8))
    for prompt, group in zip(prompts, groups):
        assert len(group) == 3 and group[0] is group[1] is group[2]
        tokens = group[0].token_ids
        with torch.no_grad():
            logits = tiny_model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1]
        chosen = logits.gather(-1, torch.tensor(tokens)[:, None]).squeeze(-1)
        assert (logits.max(-1).values - chosen).max().item() < 1e-3


def test_score_matches_what_generate_reported(backend, prompts):
    sample = backend.generate(prompts[:1], SamplingParams(n=1, temperature=1.0, max_new_tokens=8, seed=3))[0][0]
    assert backend.score(prompts[0], sample.token_ids) == pytest.approx(sample.logprobs, abs=1e-4)


def test_int8_logprobs_stay_within_the_measured_bound(smollm2_dir, tmp_path_factory):
    engine = CTranslate2Backend(smollm2_dir, compute_type="int8", cache_dir=tmp_path_factory.mktemp("ct2-int8"))
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    prompts = [render_prompt(engine.tokenizer, code) for code in BUGGY]
    groups = engine.generate(prompts, SamplingParams(n=2, temperature=1.0, max_new_tokens=16, seed=4))
    gap = gaps(model, prompts, groups, 1.0)
    assert 0.0 < gap.mean().item() < INT8_MEAN_ABS_BOUND  # quantized: close, never identical


def lora_adapter(model_dir, out_dir, seed: int):
    """A LoRA adapter whose B matrices are random, so it changes the model's outputs."""
    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                           init_lora_weights=False))
    peft.save_pretrained(out_dir)
    return peft.merge_and_unload().eval()


def test_hot_swap_serves_the_merged_adapter_and_reports_its_cost(tiny_dir, tmp_path, prompts):
    engine = CTranslate2Backend(tiny_dir, compute_type="float32", cache_dir=tmp_path / "ct2")
    merged = lora_adapter(tiny_dir, tmp_path / "adapter", seed=0)
    before = engine.score(prompts[0], [10, 11, 12])
    engine.load_policy(1, str(tmp_path / "adapter"))
    assert engine.policy_version == 1 and engine.last_swap_s > 0
    after = engine.score(prompts[0], [10, 11, 12])
    assert after != pytest.approx(before, abs=1e-3)
    assert after == pytest.approx(recomputed(merged, prompts[0], [10, 11, 12], 1.0).tolist(), abs=1e-3)
    groups = engine.generate(prompts, SamplingParams(n=2, temperature=1.0, max_new_tokens=6, seed=0))
    assert gaps(merged, prompts, groups, 1.0).max().item() < 1e-3


def test_a_full_model_directory_is_served_as_is(tiny_dir, tmp_path, prompts):
    engine = CTranslate2Backend(tiny_dir, compute_type="float32", cache_dir=tmp_path / "ct2")
    merged = lora_adapter(tiny_dir, tmp_path / "adapter", seed=1)
    merged.save_pretrained(tmp_path / "full")
    engine.load_policy(2, str(tmp_path / "full"))
    assert engine.score(prompts[0], [5, 6]) == pytest.approx(recomputed(merged, prompts[0], [5, 6], 1.0).tolist(),
                                                            abs=1e-3)


def test_a_directory_that_is_no_policy_is_refused(backend, tmp_path):
    with pytest.raises(PolicyLoadError):
        backend.load_policy(9, str(tmp_path))
    assert backend.policy_version == 0


def test_unknown_compute_type_is_a_clear_error(tiny_dir):
    with pytest.raises(ValueError, match="compute_type"):
        CTranslate2Backend(tiny_dir, compute_type="int4")


def test_the_default_config_builds_this_backend_with_its_cpu_budget(tiny_dir, tmp_path):
    from producers.generator.backends import make_backend
    from producers.generator.config import GeneratorConfig

    engine = make_backend(GeneratorConfig(model_dir=tiny_dir, compute_type="int8", threads=1))
    assert isinstance(engine, CTranslate2Backend)
    assert (engine.compute_type, engine.threads, engine.generator.compute_type) == ("int8", 1, "int8_float32")
    assert (engine.replicas, engine.generator.num_generators) == (1, 1)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_conversion_leaves_the_garbage_collector_as_it_found_it(tiny_dir, tmp_path, enabled):
    import gc

    from producers.generator.backends.ct2 import convert

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        convert(tiny_dir, tmp_path / "engine", "float32")
        assert (tmp_path / "engine" / "model.bin").is_file()
        assert gc.get_freeze_count() == 0 and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_replicas_generate_chunks_at_once_and_keep_the_prompt_order(tiny_dir, prompts):
    """Two single-threaded replicas: five prompts go out as two chunks at the same time, and
    each group still answers its own prompt (greedy: the same completion as one replica gives)."""
    one = CTranslate2Backend(tiny_dir, compute_type="float32", threads=1)
    two = CTranslate2Backend(tiny_dir, compute_type="float32", threads=2)
    assert two.generator.num_generators == 2
    five = (prompts * 3)[:5]
    greedy = SamplingParams(n=2, temperature=0.0, max_new_tokens=6)
    assert [[s.token_ids for s in g] for g in two.generate(five, greedy)] == \
        [[s.token_ids for s in g] for g in one.generate(five, greedy)]
    sampled = two.generate(five, SamplingParams(n=3, temperature=1.0, max_new_tokens=6))
    assert [len(g) for g in sampled] == [3] * 5
