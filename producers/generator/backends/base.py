"""The one interface every generation engine implements, and the values it trades in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class SamplingParams(BaseModel):
    """How K completions are drawn for one prompt (the same meaning in every backend)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(8, ge=1, description="K: completions per prompt.")
    temperature: float = Field(1.0, ge=0.0, description="Softmax temperature; 0 means greedy decoding.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus mass kept; 1 disables.")
    top_k: int = Field(0, ge=0, description="Keep the k most likely tokens; 0 disables.")
    max_new_tokens: int = Field(256, ge=1, description="Completion length cap.")
    seed: int | None = Field(0, ge=0, description="RNG seed for the call; None draws from the process RNG.")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class Sample:
    """One completion.

    `logprobs[i]` is the behaviour log-probability of `token_ids[i]`: log_softmax(logits / T)
    over the full vocabulary (T = 1 when greedy), i.e. what the learner recomputes. top-p /
    top-k truncation is *not* renormalised into it; see backends/hf.py for why.
    `token_ids` ends with the stop token when `finish_reason == "stop"`; `text` omits it.
    """

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: FinishReason


class BackendUnavailableError(RuntimeError):
    """The engine a backend wraps is not installed or cannot run here."""


class PolicyLoadError(ValueError):
    """A policy location that is neither a LoRA adapter nor a full model directory."""


@runtime_checkable
class GenerationBackend(Protocol):
    """A sampler of K completions per tokenised prompt whose weights can be hot-swapped."""

    policy_version: int

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Sample]]:
        """K = params.n samples for each prompt, in prompt order."""
        ...

    def load_policy(self, version: int, location: str) -> None:
        """Switch to the policy stored at `location` (adapter or full model); later samples use it."""
        ...


def rows_per_prompt(params: SamplingParams) -> int:
    """Greedy decoding gives the same completion n times, so it is decoded once and copied."""
    return 1 if params.greedy else params.n


def stop_token_ids(eos: int | list[int] | None, fallback: int) -> list[int]:
    """The end-of-turn ids a model's generation config names (`fallback`, the tokenizer's eos, if none)."""
    eos = eos if eos is not None else fallback
    return sorted(set(eos if isinstance(eos, list) else [eos]))


def model_stop_token_ids(model_dir: str | Path, fallback: int) -> list[int]:
    """The end-of-turn ids of a model directory's generation config (`fallback` if it has none),
    for the engines that do not load the model through transformers."""
    from transformers import GenerationConfig

    try:
        eos = GenerationConfig.from_pretrained(model_dir).eos_token_id
    except OSError:
        eos = None
    return stop_token_ids(eos, fallback)


def policy_kind(location: str) -> Literal["adapter", "full"]:
    """Whether `location` holds a peft LoRA adapter or a full Hugging Face model."""
    from pathlib import Path

    path = Path(location)
    if (path / "adapter_config.json").is_file():
        return "adapter"
    if (path / "config.json").is_file():
        return "full"
    raise PolicyLoadError(f"{location}: no adapter_config.json or config.json, not a policy directory")


def write_merged_policy(base_dir: str | Path, location: str, out: str | Path) -> Path:
    """A Hugging Face folder at `out` holding the policy at `location` as plain float32 weights
    (no tokenizer): the adapter merged into the base, or the full model copied. For the engines
    that load weights from a folder (ctranslate2's converter, vLLM's in-place reload)."""
    import torch
    from transformers import AutoModelForCausalLM

    if policy_kind(location) == "full":
        model = AutoModelForCausalLM.from_pretrained(location, dtype=torch.float32)
    else:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        try:
            model = PeftModel.from_pretrained(base, location).merge_and_unload()
        except (ValueError, KeyError, RuntimeError) as exc:
            raise PolicyLoadError(f"{location}: adapter does not fit the base {base_dir}: {exc}") from exc
    model.save_pretrained(out)
    return Path(out)
