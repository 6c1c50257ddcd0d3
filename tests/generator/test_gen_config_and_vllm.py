"""GeneratorConfig, and the vLLM backend's translation layer (the engine itself: test_gen_vllm_engine.py)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from producers.generator.backends import (
    BackendUnavailableError,
    PolicyLoadError,
    SamplingParams,
    make_backend,
    policy_kind,
)
from producers.generator.backends.vllm_backend import VLLMBackend, samples_from_output, vllm_sampling_kwargs
from producers.generator.config import GeneratorConfig

HAVE_VLLM = importlib.util.find_spec("vllm") is not None


def test_config_defaults_make_the_sampling_params():
    cfg = GeneratorConfig(group_size=4, temperature=0.8, top_p=0.9, max_new_tokens=64, seed=7)
    assert cfg.sampling_params() == SamplingParams(n=4, temperature=0.8, top_p=0.9, top_k=0, max_new_tokens=64, seed=7)
    assert cfg.backend == "ctranslate2" and cfg.include_error_context is False


@pytest.mark.parametrize(
    "bad", [{"top_p": 0.0}, {"top_p": 1.5}, {"group_size": 0}, {"backend": "tgi"}, {"tempreature": 1.0},
            {"vllm_policy_swap": "reload"}]
)
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValidationError):
        GeneratorConfig(**bad)


def test_policy_kind_reads_the_directory(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "adapter_config.json").write_text("{}")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "config.json").write_text("{}")
    assert policy_kind(str(tmp_path / "a")) == "adapter"
    assert policy_kind(str(tmp_path / "f")) == "full"
    with pytest.raises(PolicyLoadError):
        policy_kind(str(tmp_path))


def test_vllm_sampling_kwargs_translate_our_params():
    params = SamplingParams(n=8, temperature=0.7, top_p=0.95, top_k=0, max_new_tokens=128, seed=100)
    kwargs = vllm_sampling_kwargs(params, prompt_index=3, stop_ids=[2])
    assert kwargs["n"] == 8 and kwargs["max_tokens"] == 128
    assert kwargs["top_k"] == -1  # vLLM's "disabled"
    assert kwargs["seed"] == 103  # per-request seeds keep a batch reproducible
    assert kwargs["logprobs"] == 0 and kwargs["stop_token_ids"] == [2]
    assert vllm_sampling_kwargs(params.model_copy(update={"seed": None, "top_k": 20}), 0, [2])["seed"] is None
    assert vllm_sampling_kwargs(params.model_copy(update={"temperature": 0.0}), 0, [2])["n"] == 1  # greedy: once


def test_vllm_outputs_become_samples():
    logprob = lambda v: SimpleNamespace(logprob=v)  # noqa: E731
    completion = SimpleNamespace(
        token_ids=[5, 9, 2],
        logprobs=[{5: logprob(-0.1), 7: logprob(-3.0)}, {9: logprob(-0.5)}, {2: logprob(-0.2)}],
        text="x y",
        finish_reason="stop",
    )
    truncated = SimpleNamespace(token_ids=[4], logprobs=[{4: logprob(-1.0)}], text="z", finish_reason="length")
    samples = samples_from_output(SimpleNamespace(outputs=[completion, truncated]), 2, stop_ids=[2])
    assert samples[0].token_ids == [5, 9, 2] and samples[0].logprobs == [-0.1, -0.5, -0.2]
    assert samples[0].finish_reason == "stop" and samples[0].text == "x y"
    assert samples[1].finish_reason == "length" and samples[1].logprobs == [-1.0]
    greedy = samples_from_output(SimpleNamespace(outputs=[completion]), 3, stop_ids=[2])
    assert len(greedy) == 3 and greedy[0] == greedy[2]  # decoded once, copied K times
    unstopped = samples_from_output(SimpleNamespace(outputs=[completion]), 1, stop_ids=[7])
    assert unstopped[0].finish_reason == "length"  # "stop" only on one of the model's end tokens


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM is installed here")
def test_vllm_backend_without_vllm_is_a_typed_error(tmp_path):
    with pytest.raises(BackendUnavailableError):
        VLLMBackend(tmp_path)
    with pytest.raises(BackendUnavailableError):
        make_backend(GeneratorConfig(backend="vllm", model_dir=tmp_path))
