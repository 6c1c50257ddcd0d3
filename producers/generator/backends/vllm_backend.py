"""The vLLM backend (GPU, optional extra `reshaper[vllm]`): one engine, the current policy
served as a LoRA adapter through `LoRARequest`, new versions picked up without a restart.

vLLM is imported only when this backend is built, so the rest of the project runs
without it. The engine is created with `logprobs_mode="processed_logprobs"`: logprobs
after temperature (and after top-k / top-p). Without truncation that is exactly the
full-vocabulary log_softmax(logits / T) that the transformers backend reports and the
learner recomputes. With top_p < 1 or top_k > 0 vLLM renormalises over the kept set, so
its logprobs are higher than the transformers backend's by -log(kept mass) per token;
vLLM exposes no tempered-but-untruncated mode, so run the learner's off-policy correction
with truncation off, or accept that offset (it is what vLLM actually sampled from).
"""

from __future__ import annotations

from pathlib import Path

from producers.generator.backends.base import (
    BackendUnavailableError,
    PolicyLoadError,
    Sample,
    SamplingParams,
    policy_kind,
)


def import_vllm():
    try:
        import vllm
    except ImportError as err:  # the GPU extra is not installed
        raise BackendUnavailableError(
            f"vLLM is not installed ({err}); pip install 'reshaper[vllm]' on a CUDA host"
        ) from err
    return vllm


def vllm_sampling_kwargs(params: SamplingParams, prompt_index: int) -> dict:
    """Keyword arguments of vllm.SamplingParams meaning the same as `params`.

    Each prompt gets its own seed (seed + prompt index) because vLLM seeds per request;
    logprobs=0 asks for the sampled token's logprob only.
    """
    return {
        "n": params.n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k if params.top_k > 0 else -1,
        "max_tokens": params.max_new_tokens,
        "seed": None if params.seed is None else params.seed + prompt_index,
        "logprobs": 0,
        "skip_special_tokens": True,
    }


def samples_from_output(request_output) -> list[Sample]:
    """vLLM's RequestOutput for one prompt as our Samples (one per completion)."""
    samples = []
    for completion in request_output.outputs:
        token_ids = list(completion.token_ids)
        logprobs = [step[token].logprob for step, token in zip(completion.logprobs, token_ids)]
        finish = "length" if completion.finish_reason == "length" else "stop"
        samples.append(Sample(token_ids, logprobs, completion.text, finish))
    return samples


class VLLMBackend:
    """GenerationBackend on a vLLM engine with LoRA enabled."""

    def __init__(self, model_dir: str | Path, *, max_lora_rank: int = 64, **engine_kwargs):
        vllm = import_vllm()
        self._vllm = vllm
        self.engine = vllm.LLM(
            model=str(model_dir),
            enable_lora=True,
            max_lora_rank=max_lora_rank,
            logprobs_mode="processed_logprobs",
            **engine_kwargs,
        )
        self.policy_version = 0
        self._lora_request = None

    def load_policy(self, version: int, location: str) -> None:
        """Serve adapter `version` next; vLLM loads it on first use, the engine keeps running."""
        if policy_kind(location) != "adapter":
            raise PolicyLoadError(
                f"{location}: the vLLM backend hot-swaps LoRA adapters only; restart it for full weights"
            )
        if version <= 0:
            raise PolicyLoadError("LoRA adapter versions start at 1 (vLLM reserves id 0)")
        from vllm.lora.request import LoRARequest

        self._lora_request = LoRARequest(f"v{version}", version, str(location))
        self.policy_version = version

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        from vllm.inputs import TokensPrompt

        inputs = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        sampling = [self._vllm.SamplingParams(**vllm_sampling_kwargs(params, i)) for i in range(len(prompts))]
        outputs = self.engine.generate(inputs, sampling, lora_request=self._lora_request, use_tqdm=False)
        return [samples_from_output(out) for out in outputs]
