"""The transformers backend: behaviour logprobs, seeds, grouping, LoRA hot-swap."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from producers.generator.backends import GenerationBackend, PolicyLoadError, SamplingParams
from producers.generator.backends.hf import TransformersBackend
from schemas.prompt import render_prompt

BUGGY = ["def add(a, b):\n    return a - b\n", "def is_even(n):\n    return n % 2 == 1\n"]


@pytest.fixture(scope="module")
def backend(tiny_dir):
    return TransformersBackend(tiny_dir, device="cpu", max_batch_sequences=8)


@pytest.fixture(scope="module")
def prompts(backend):
    # The second prompt carries error context, so the two differ in length and the batch is padded.
    ids = [render_prompt(backend.tokenizer, BUGGY[0]), render_prompt(backend.tokenizer, BUGGY[1], "AssertionError")]
    assert len(ids[0]) != len(ids[1])
    return ids


def recomputed(model, prompt: list[int], completion: list[int], temperature: float):
    """Plain forward pass over prompt + completion (no padding, no cache): the learner's view.
    Returns log_softmax(logits / T) at the completion tokens and the logits of those steps."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1), logits


def max_logprob_gap(model, prompts, groups, temperature) -> float:
    gap = 0.0
    for prompt, group in zip(prompts, groups):
        for sample in group:
            expected, _ = recomputed(model, prompt, sample.token_ids, temperature)
            gap = max(gap, (expected - torch.tensor(sample.logprobs)).abs().max().item())
    return gap


def test_backend_satisfies_the_protocol(backend):
    assert isinstance(backend, GenerationBackend)


def test_groups_come_back_per_prompt_with_one_logprob_per_token(backend, prompts):
    params = SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=0)
    groups = backend.generate(prompts, params)
    assert [len(g) for g in groups] == [3, 3]
    for sample in groups[0] + groups[1]:
        assert len(sample.token_ids) == len(sample.logprobs) <= 6
        assert all(lp <= 0.0 for lp in sample.logprobs)
        assert sample.finish_reason in ("stop", "length")
        assert sample.finish_reason == "stop" or len(sample.token_ids) == 6


@pytest.mark.parametrize(
    "temperature, top_p, top_k",
    [(0.7, 1.0, 0), (1.3, 0.8, 0), (0.9, 1.0, 5)],
    ids=["tempered", "top-p", "top-k"],
)
def test_behaviour_logprobs_equal_full_vocabulary_tempered_recomputation(backend, prompts, temperature, top_p, top_k):
    params = SamplingParams(n=2, temperature=temperature, top_p=top_p, top_k=top_k, max_new_tokens=8, seed=3)
    groups = backend.generate(prompts, params)
    assert max_logprob_gap(backend.model, prompts, groups, temperature) < 1e-4


def test_truncation_is_applied_to_sampling_but_not_renormalised_into_logprobs(backend, prompts):
    params = SamplingParams(n=4, temperature=1.0, top_k=3, max_new_tokens=8, seed=5)
    groups = backend.generate(prompts, params)
    renormalisation_gaps = []
    for prompt, group in zip(prompts, groups):
        for sample in group:
            _, logits = recomputed(backend.model, prompt, sample.token_ids, 1.0)
            top3 = logits.topk(3, dim=-1).indices
            assert all(tok in top3[i].tolist() for i, tok in enumerate(sample.token_ids))
            kept_mass = torch.softmax(logits, -1).gather(-1, top3).sum(-1)
            renormalised = torch.tensor(sample.logprobs) - kept_mass.log()
            renormalisation_gaps.append((renormalised - torch.tensor(sample.logprobs)).min().item())
    # The kept mass is below 1, so a renormalised logprob would have been visibly higher.
    assert min(renormalisation_gaps) > 1e-3


def test_same_seed_repeats_and_other_seed_differs(backend, prompts):
    params = SamplingParams(n=3, temperature=1.0, max_new_tokens=8, seed=11)
    state = torch.get_rng_state()
    first = backend.generate(prompts, params)
    assert torch.equal(torch.get_rng_state(), state)  # the process RNG is left alone
    again = backend.generate(prompts, params)
    other = backend.generate(prompts, params.model_copy(update={"seed": 12}))
    tokens = lambda groups: [s.token_ids for g in groups for s in g]  # noqa: E731
    assert tokens(first) == tokens(again)
    assert [s.logprobs for g in first for s in g] == [s.logprobs for g in again for s in g]
    assert tokens(first) != tokens(other)


def test_chunked_batches_give_the_same_shapes(tiny_dir, prompts):
    small = TransformersBackend(tiny_dir, device="cpu", max_batch_sequences=2)
    groups = small.generate(prompts, SamplingParams(n=2, temperature=0.8, max_new_tokens=5, seed=0))
    assert [len(g) for g in groups] == [2, 2]
    assert max_logprob_gap(small.model, prompts, groups, 0.8) < 1e-4


def test_greedy_is_argmax_and_identical_across_samples(backend, prompts):
    groups = backend.generate(prompts[:1], SamplingParams(n=2, temperature=0.0, max_new_tokens=6))
    a, b = groups[0]
    assert a.token_ids == b.token_ids
    _, logits = recomputed(backend.model, prompts[0], a.token_ids, 1.0)
    assert logits.argmax(-1).tolist() == a.token_ids


def test_stop_token_ends_the_sample_and_is_kept_in_tokens(backend):
    stop = backend.stop_token_ids[0]
    pad = backend.pad_token_id
    word = backend.tokenizer("ok", add_special_tokens=False)["input_ids"]
    tokens = torch.tensor(word + [stop, pad, pad])
    logprobs = torch.tensor([-0.5] * len(word) + [-0.1, -9.0, -9.0])
    sample = backend._to_sample(tokens, logprobs)
    assert sample.token_ids == word + [stop]
    assert sample.logprobs == pytest.approx([-0.5] * len(word) + [-0.1])
    assert sample.text == "ok" and sample.finish_reason == "stop"


def test_empty_prompt_is_rejected(backend):
    with pytest.raises(ValueError):
        backend.generate([[]], SamplingParams(n=1))


def save_random_lora(base_dir, out_dir, seed: int) -> None:
    """A LoRA whose A and B are both random (peft's default B = 0 would change nothing)."""
    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(base_dir)
    lora = LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    get_peft_model(base, lora).save_pretrained(out_dir)


def reference_with_adapter(base_dir, adapter_dir):
    return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), adapter_dir).eval()


def test_hot_swap_lora_versions_without_reloading_the_base(tiny_dir, prompts, tmp_path):
    swapped = TransformersBackend(tiny_dir, device="cpu")
    base_reference = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    params = SamplingParams(n=2, temperature=0.9, top_p=0.95, max_new_tokens=8, seed=2)
    for version in (2, 3):
        adapter = tmp_path / f"v{version}"
        save_random_lora(tiny_dir, adapter, seed=version)
        swapped.load_policy(version, str(adapter))
        assert swapped.policy_version == version
        assert set(swapped.model.peft_config) == {f"v{version}"}  # the old adapter is dropped
        groups = swapped.generate(prompts, params)
        assert max_logprob_gap(reference_with_adapter(tiny_dir, adapter), prompts, groups, 0.9) < 1e-4
        # ...and the adapter really changed the policy: the base weights disagree.
        assert max_logprob_gap(base_reference, prompts, groups, 0.9) > 1e-2


def test_full_model_directory_replaces_the_weights(tiny_dir, smollm2_dir, prompts, tmp_path):
    from producers.generator.model_store import build_tiny_model

    other = build_tiny_model(tmp_path / "other", smollm2_dir, initializer_range=0.5, seed=7)
    swapped = TransformersBackend(tiny_dir, device="cpu")
    swapped.load_policy(1, str(other))
    groups = swapped.generate(prompts, SamplingParams(n=1, temperature=1.0, max_new_tokens=5, seed=0))
    assert max_logprob_gap(AutoModelForCausalLM.from_pretrained(other).eval(), prompts, groups, 1.0) < 1e-4


def test_unknown_policy_location_is_a_typed_error(backend, tmp_path):
    with pytest.raises(PolicyLoadError):
        backend.load_policy(9, str(tmp_path))


def test_model_generation_defaults_do_not_leak_into_sampling(tiny_dir, prompts, tmp_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    with torch.no_grad():
        first_greedy = int(model(torch.tensor([prompts[0]])).logits[0, -1].argmax())
    # A model folder whose own generation defaults would forbid that token.
    model.generation_config.suppress_tokens = [first_greedy]
    model.save_pretrained(tmp_path / "opinionated")
    AutoTokenizer.from_pretrained(tiny_dir).save_pretrained(tmp_path / "opinionated")
    backend = TransformersBackend(tmp_path / "opinionated", device="cpu")
    groups = backend.generate(prompts[:1], SamplingParams(n=1, temperature=0.0, max_new_tokens=6))
    assert groups[0][0].token_ids[0] == first_greedy
    _, logits = recomputed(backend.model, prompts[0], groups[0][0].token_ids, 1.0)
    assert logits.argmax(-1).tolist() == groups[0][0].token_ids
