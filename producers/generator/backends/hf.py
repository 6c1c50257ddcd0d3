"""The transformers backend: batched sampling with `model.generate` (KV cache, left padding)
and hot-swapped LoRA adapters through peft. The CPU default; also runs on one GPU.

Behaviour logprobs. The learner recomputes log_softmax(logits / T) over the full
vocabulary, so that is what is reported for each sampled token: the raw logits that
`generate` returns (`output_logits=True`, taken before the processor chain), divided by
T. When top-p / top-k truncate the distribution, the sampler actually drew from the
renormalised kept set, whose logprob is higher by -log(kept mass); we deliberately do
*not* add that term. Reporting the full-vocabulary value makes the importance ratio
exactly 1 when learner and generator hold the same weights (a renormalised μ would bias
every ratio below 1 even on-policy), and μ then differs from the sampled distribution
only by the constant per-step factor on the kept mass. Greedy decoding (T = 0) reports
log_softmax(logits), i.e. T = 1.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from producers.generator.backends.base import (
    PolicyLoadError,
    Sample,
    SamplingParams,
    policy_kind,
    rows_per_prompt,
    stop_token_ids,
)


def pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class TransformersBackend:
    """GenerationBackend on a Hugging Face causal LM, optionally wearing one LoRA adapter."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str = "auto",
        dtype: torch.dtype = torch.float32,
        max_batch_sequences: int = 16,
    ):
        # The raw logits of every step are kept until the batch ends (B x T x vocab floats),
        # so max_batch_sequences is what bounds this backend's memory.
        self.device = pick_device(device)
        self.dtype = dtype
        self.max_batch_sequences = max_batch_sequences
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.stop_token_ids: list[int] = []
        self.model = self._load_full(model_dir)
        self.base_dir = str(model_dir)
        self.policy_version = 0
        self.policy_location = str(model_dir)
        self._adapter_name: str | None = None

    def _load_full(self, model_dir: str | Path):
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=self.dtype)
        self.stop_token_ids = stop_token_ids(model.generation_config.eos_token_id, self.tokenizer.eos_token_id)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else self.stop_token_ids[0]
        # generate() fills every setting we leave unset from the model's own generation
        # config (repetition penalty, min length, ...). Sampling must mean exactly
        # SamplingParams, so the model keeps only its special tokens.
        model.generation_config = GenerationConfig(
            bos_token_id=model.generation_config.bos_token_id,
            eos_token_id=self.stop_token_ids,
            pad_token_id=self.pad_token_id,
        )
        return model.to(self.device).eval()

    # ---- hot swap -------------------------------------------------------------------------

    def load_policy(self, version: int, location: str) -> None:
        """Serve policy `version` from `location`.

        A LoRA adapter directory is loaded beside the base weights and made active, and the
        previous adapter is dropped: the base model is never reloaded. A full model
        directory replaces the model (slower; for merged checkpoints such as the warm-up).
        """
        if version == self.policy_version and str(location) == self.policy_location:
            return
        kind = policy_kind(location)
        if kind == "full":
            self.model = self._load_full(location)
            self._adapter_name = None
        else:
            self._swap_adapter(version, location)
        self.policy_version = version
        self.policy_location = str(location)

    def _swap_adapter(self, version: int, location: str) -> None:
        from peft import PeftModel

        name = f"v{version}"
        previous = self._adapter_name
        if previous == name:
            raise PolicyLoadError(f"policy version {version} is already loaded from {self.policy_location}")
        if isinstance(self.model, PeftModel):
            self.model.load_adapter(location, adapter_name=name)
            self.model.set_adapter(name)
            if previous is not None:
                self.model.delete_adapter(previous)
        else:
            self.model = PeftModel.from_pretrained(self.model, location, adapter_name=name)
        self.model.to(self.device).eval()
        self._adapter_name = name

    # ---- sampling -------------------------------------------------------------------------

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        """K = params.n samples per prompt; reproducible for the same prompts, params and seed."""
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        per_chunk = max(1, self.max_batch_sequences // params.n)
        devices = [self.device] if self.device.type == "cuda" else []
        results: list[list[Sample]] = []
        # fork_rng: seeding must not disturb the process RNG that other code relies on.
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            if params.seed is not None:
                torch.manual_seed(params.seed)
            for start in range(0, len(prompts), per_chunk):
                results.extend(self._generate_chunk(prompts[start : start + per_chunk], params))
        return results

    def generation_config(self, params: SamplingParams) -> GenerationConfig:
        """The complete generate() settings for `params` (nothing inherited from the model's defaults)."""
        sampling = (
            {} if params.greedy else {"temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k}
        )
        return GenerationConfig(
            do_sample=not params.greedy,
            num_return_sequences=rows_per_prompt(params),
            max_new_tokens=params.max_new_tokens,
            eos_token_id=self.stop_token_ids,
            pad_token_id=self.pad_token_id,
            return_dict_in_generate=True,
            output_logits=True,
            **sampling,
        )

    def _generate_chunk(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        input_ids, attention_mask = left_pad(prompts, self.pad_token_id, self.device)
        out = self.model.generate(
            input_ids=input_ids, attention_mask=attention_mask, generation_config=self.generation_config(params)
        )
        completions = out.sequences[:, input_ids.shape[1] :]
        logprobs = sampled_logprobs(out.logits, completions, params.temperature if not params.greedy else 1.0)
        samples = [self._to_sample(completions[i], logprobs[i]) for i in range(completions.shape[0])]
        # generate() repeats each prompt in place, so rows come grouped by prompt.
        rows = rows_per_prompt(params)
        groups = [samples[i * rows : (i + 1) * rows] for i in range(len(prompts))]
        return groups if rows == params.n else [group * params.n for group in groups]

    def _to_sample(self, tokens: torch.Tensor, logprobs: torch.Tensor) -> Sample:
        token_ids = tokens.tolist()
        stops = [i for i, t in enumerate(token_ids) if t in self.stop_token_ids]
        if stops:
            length, finish, text_ids = stops[0] + 1, "stop", token_ids[: stops[0]]
        else:
            length, finish, text_ids = len(token_ids), "length", token_ids
        text = self.tokenizer.decode(text_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return Sample(token_ids[:length], logprobs[:length].tolist(), text, finish)


def left_pad(prompts: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts right-aligned in one batch (decoder-only models continue from the last column)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def sampled_logprobs(step_logits: tuple[torch.Tensor, ...], tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """log_softmax(logits / T) over the full vocabulary at each sampled token: [batch, steps]."""
    columns = []
    for step, logits in enumerate(step_logits):
        logp = torch.log_softmax(logits.float() / temperature, dim=-1)
        columns.append(logp.gather(-1, tokens[:, step : step + 1]).squeeze(-1))
    return torch.stack(columns, dim=1).cpu()
