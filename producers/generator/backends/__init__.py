"""Generation engines behind one interface (GenerationBackend)."""

from producers.generator.backends.base import (
    BackendUnavailableError,
    GenerationBackend,
    PolicyLoadError,
    Sample,
    SamplingParams,
    policy_kind,
)

__all__ = [
    "BackendUnavailableError",
    "GenerationBackend",
    "PolicyLoadError",
    "Sample",
    "SamplingParams",
    "make_backend",
    "policy_kind",
]


def make_backend(config) -> GenerationBackend:
    """The backend a GeneratorConfig names (engines are imported only when chosen)."""
    if config.backend == "ctranslate2":
        from producers.generator.backends.ct2 import CTranslate2Backend

        return CTranslate2Backend(
            config.model_dir, compute_type=config.compute_type, threads=config.threads,
            max_batch_sequences=config.max_batch_sequences,
        )
    if config.backend == "transformers":
        import torch

        from producers.generator.backends.hf import TransformersBackend

        if config.threads:
            torch.set_num_threads(config.threads)
        return TransformersBackend(
            config.model_dir, device=config.device, max_batch_sequences=config.max_batch_sequences
        )
    if config.backend == "vllm":
        from producers.generator.backends.vllm_backend import VLLMBackend

        return VLLMBackend(config.model_dir, threads=config.threads, kv_cache_gib=config.vllm_kv_cache_gib,
                           max_model_len=config.vllm_max_model_len, seed=config.seed,
                           policy_swap=config.vllm_policy_swap)
    raise ValueError(f"unknown backend {config.backend!r}")
