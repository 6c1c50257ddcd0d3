"""The CTranslate2 backend: the CPU default. CTranslate2 runs the policy with its own
kernels (and, if asked, int8 weights), converted once from the Hugging Face folder.

Behaviour logprobs. As in backends/hf.py: log_softmax(logits / T) over the full vocabulary
at each sampled token, from the engine's own raw logits (`return_logits_vocab`), so they are
the log-probabilities of the policy that actually sampled, quantization included. The
learner's truncated importance sampling corrects the gap to the learner's own arithmetic
(float32, or bf16 where `learner/precision.py` picks it).

Cores. The CPU budget (`threads`, 0: every core) runs as that many engine replicas of one
thread each, generating separate chunks of a call's prompts at the same time: for a model of
this size one thread per batch uses a core best. Measured on 2 cores (SmolLM2-135M int8, K = 4,
128 new tokens): one replica on one thread 115.5 tokens/s, one replica on two threads 77.5,
two replicas of one thread 178.7 (2 prompts per call) and 231.5 (4 prompts per call).

Policy versions. The engine cannot wear a LoRA adapter, so a new version is merged into the
base weights with peft and converted again (`load_policy`); `last_swap_s` records what a swap
cost. The converted base is cached under .cache/models/ct2, keyed by the model's manifest, the
compute type and the engine's version, so a warm start skips the conversion.

Seeds. The engine's `set_random_seed` is applied before each call, but its sampler does not
repeat across calls (OpenNMT/CTranslate2#1757): samples are not reproducible bit for bit. The
transformers backend is the one to use where exact repeats matter.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import shutil
import tempfile
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from producers.generator.backends.base import (
    BackendUnavailableError,
    Sample,
    SamplingParams,
    model_stop_token_ids,
    rows_per_prompt,
    write_merged_policy,
)
from producers.generator.model_store import MANIFEST

# int8: int8 weights and matmuls with float32 activations (the engine names it int8_float32 on a CPU).
COMPUTE_TYPES = ("int8", "float32")


def _ctranslate2():
    try:
        import ctranslate2
    except ImportError as exc:  # pragma: no cover - it is a declared dependency
        raise BackendUnavailableError("ctranslate2 is not installed (pip install ctranslate2)") from exc
    return ctranslate2


def convert(model_dir: Path, out_dir: Path, compute_type: str) -> Path:
    """Convert a Hugging Face folder (model + tokenizer) into an engine folder at `out_dir`."""
    from ctranslate2.converters import TransformersConverter

    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        # Weights are stored in the precision they are computed in, so loading never re-quantizes.
        with heap_frozen():
            TransformersConverter(str(model_dir)).convert(str(tmp), quantization=compute_type, force=True)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


@contextmanager
def heap_frozen() -> Iterator[None]:
    """The objects that exist now kept out of the garbage collector's sight until the block ends.

    The converter calls ``gc.collect()`` once per decoder layer to free the weights it has
    copied; each call walks the whole heap, which in a generator process holds torch and
    transformers: measured, 7.1 of a 10.8 s hot-swap. Frozen (``gc.freeze``), the old heap
    is skipped, while what the conversion itself makes is still collected."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def cached_conversion(model_dir: Path, compute_type: str, cache_dir: Path) -> Path:
    """The engine folder of `model_dir`, converted on first use."""
    ct2 = _ctranslate2()
    manifest = model_dir / MANIFEST
    identity = manifest.read_bytes() if manifest.is_file() else str(model_dir.resolve()).encode()
    key = hashlib.sha256(identity + compute_type.encode() + ct2.__version__.encode()).hexdigest()[:12]
    out = cache_dir / f"{model_dir.name}-{compute_type}-{key}"
    if not (out / "model.bin").is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        convert(model_dir, out, compute_type)
    return out


class CTranslate2Backend:
    """GenerationBackend on a CTranslate2 Generator; new policies are merged and converted."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        compute_type: str = "int8",
        threads: int = 0,
        max_batch_sequences: int = 16,
        cache_dir: str | Path | None = None,
    ):
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {COMPUTE_TYPES}, got {compute_type!r}")
        from transformers import AutoTokenizer

        self.base_dir = Path(model_dir)
        self.compute_type = compute_type
        self.threads = threads
        self.replicas = threads or os.cpu_count() or 1  # one single-threaded replica per core
        self.max_batch_sequences = max_batch_sequences
        self.tokenizer = AutoTokenizer.from_pretrained(self.base_dir)
        self.stop_token_ids = model_stop_token_ids(self.base_dir, self.tokenizer.eos_token_id)
        cache = Path(cache_dir) if cache_dir else self.base_dir.parent / "ct2"
        # Merged and converted policy versions live here until replaced; removed with the backend.
        self._work = Path(tempfile.mkdtemp(prefix="reshaper-ct2-"))
        weakref.finalize(self, shutil.rmtree, self._work, True)
        self._engine_dir = cached_conversion(self.base_dir, compute_type, cache)
        self.generator = self._open(self._engine_dir)
        self.policy_version = 0
        self.policy_location = str(model_dir)
        self.last_swap_s: float | None = None

    def _open(self, engine_dir: Path):
        ct2 = _ctranslate2()
        return ct2.Generator(str(engine_dir), device="cpu", compute_type=self.compute_type,
                             inter_threads=self.replicas, intra_threads=1)

    # ---- hot swap -------------------------------------------------------------------------

    def load_policy(self, version: int, location: str) -> None:
        """Serve policy `version` from `location` (a LoRA adapter over the base, or a full model)."""
        if version == self.policy_version and str(location) == self.policy_location:
            return
        started = time.perf_counter()
        merged = self._work / f"hf-v{version}"
        write_merged_policy(self.base_dir, location, merged)
        self.tokenizer.save_pretrained(merged)  # the converter reads the vocabulary from the folder
        engine_dir = convert(merged, self._work / f"ct2-v{version}", self.compute_type)
        shutil.rmtree(merged, ignore_errors=True)
        previous = self._engine_dir
        self.generator = self._open(engine_dir)
        self._engine_dir = engine_dir
        if previous.parent == self._work:  # never the cached base conversion
            shutil.rmtree(previous, ignore_errors=True)
        self.policy_version = version
        self.policy_location = str(location)
        self.last_swap_s = time.perf_counter() - started

    # ---- sampling -------------------------------------------------------------------------

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        """K = params.n samples per prompt (not bit-reproducible: see the module's note on seeds)."""
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        if params.seed is not None:
            _ctranslate2().set_random_seed(params.seed)
        rows = rows_per_prompt(params)
        # as many chunks as there are replicas (each under the batch cap), run at the same time
        per_chunk = max(1, min(self.max_batch_sequences // rows, math.ceil(len(prompts) / self.replicas)))
        temperature = 1.0 if params.greedy else params.temperature
        pending = [
            self.generator.generate_batch(
                [self.tokenizer.convert_ids_to_tokens(p) for p in prompts[start : start + per_chunk]],
                num_hypotheses=rows,
                max_length=params.max_new_tokens,
                sampling_topk=1 if params.greedy else params.top_k,  # 0: the whole vocabulary
                sampling_topp=params.top_p,
                sampling_temperature=temperature,
                include_prompt_in_result=False,
                end_token=self.stop_token_ids,
                return_end_token=True,
                return_logits_vocab=True,
                asynchronous=True,
            )
            for start in range(0, len(prompts), per_chunk)
        ]
        groups = [
            [self._to_sample(ids, logits, temperature) for ids, logits in zip(r.sequences_ids, r.logits)]
            for r in (future.result() for chunk in pending for future in chunk)
        ]
        return groups if rows == params.n else [group * params.n for group in groups]

    def score(self, prompt: list[int], completion: list[int], temperature: float = 1.0) -> list[float]:
        """The engine's log_softmax(logits / T) at each token of `completion` after `prompt`:
        what `generate` would report had it sampled that completion. Exact in float32; in int8
        the one-pass forward quantizes activations over the whole sequence, unlike decoding
        step by step, so the two differ by about as much as int8 differs from float32."""
        logits = np.array(self.generator.forward_batch([prompt + completion]))[0, len(prompt) - 1 : -1]
        return sampled_logprobs(logits, completion, temperature).tolist()

    def _to_sample(self, token_ids: list[int], step_logits: list, temperature: float) -> Sample:
        # In a batch of prompts of different lengths the engine feeds the longer prompts'
        # last tokens as forced decoding steps, and their logits come first: the sampled
        # tokens' logits are the last len(token_ids) steps.
        if len(step_logits) < len(token_ids):
            raise RuntimeError(f"engine returned {len(step_logits)} logit steps for {len(token_ids)} tokens")
        steps = step_logits[len(step_logits) - len(token_ids) :]
        logits = np.stack([np.asarray(step, dtype=np.float32) for step in steps])
        logprobs = sampled_logprobs(logits, token_ids, temperature)
        stopped = bool(token_ids) and token_ids[-1] in self.stop_token_ids
        text_ids = token_ids[:-1] if stopped else token_ids
        text = self.tokenizer.decode(text_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return Sample(list(token_ids), logprobs.tolist(), text, "stop" if stopped else "length")


def sampled_logprobs(logits: np.ndarray, token_ids: list[int], temperature: float) -> np.ndarray:
    """log_softmax(logits / T) at each sampled token; logits is [steps, vocab]."""
    logp = torch.log_softmax(torch.from_numpy(logits) / temperature, dim=-1)
    return logp.gather(-1, torch.tensor(token_ids)[:, None]).squeeze(-1).numpy()
