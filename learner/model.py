"""Policy model: load a local causal LM, wrap it for LoRA or full fine-tuning, and score
sampled tokens.

Weights stay fp32; on CUDA the forward runs under bf16 autocast (fp32 master weights keep
small LoRA updates from being rounded away) with gradient checkpointing. On CPU everything
is fp32, which is also what makes resume bit-exact there.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, PreTrainedModel
from trl.trainer.utils import selective_log_softmax_and_entropy

from learner.config import LearnerConfig


class ModelLoadError(FileNotFoundError):
    """The model directory is missing or holds no model config."""


def load_policy(
    model_dir: str | Path, cfg: LearnerConfig, device: torch.device | str = "cpu"
) -> torch.nn.Module:
    """Load the causal LM in ``model_dir`` (local files only, never a hub) ready to train."""
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise ModelLoadError(f"no config.json in {model_dir}")
    device = torch.device(device)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, local_files_only=True, dtype=torch.float32
    )
    model.config.use_cache = False  # no KV cache in training passes
    if device.type == "cuda" and cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    if cfg.use_lora:
        torch.manual_seed(cfg.seed)  # the adapter's random init is part of the run
        lora = LoraConfig(
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=cfg.lora_target_modules,
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora)
    model.to(device)
    model.train()
    return model


def frozen_reference(
    model: torch.nn.Module, cfg: LearnerConfig
) -> torch.nn.Module | None:
    """A reference copy for full fine-tuning with beta > 0; LoRA needs none (adapters off)."""
    if cfg.beta == 0 or cfg.use_lora:
        return None
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def _autocast(device: torch.device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_start: int | torch.Tensor,
    temperature: float,
    completion_length: int | None = None,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of the completion tokens under ``model`` at ``temperature``.

    Args:
        input_ids, attention_mask: ``[B, L]`` rows of prompt + completion, right-padded.
        completion_start: index of the first completion token, one int or ``[B]``.
        completion_length: ``T``, completion columns to return (default ``L - min(start)``).
    Returns:
        ``[B, T]`` log-probs, column ``j`` scoring the ``j``-th completion token (padding
        columns hold values of clamped positions; mask them). With ``with_entropy``, also
        the ``[B, T]`` entropies of the tempered distribution.
    """
    batch, length = input_ids.shape
    device = input_ids.device
    start = torch.as_tensor(completion_start, device=device).expand(batch).long()
    if completion_length is None:
        completion_length = length - int(start.min())
    with _autocast(device):
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    # Position p predicts token p + 1: completion token j sits at start + j, predicted at start + j - 1.
    cols = torch.arange(completion_length, device=device)
    target_pos = (start.unsqueeze(-1) + cols).clamp(max=length - 1)  # [B, T]
    predict_pos = target_pos - 1
    vocab = logits.shape[-1]
    picked = logits.gather(1, predict_pos.unsqueeze(-1).expand(-1, -1, vocab)).float()
    targets = input_ids.gather(1, target_pos)
    logp, entropy = selective_log_softmax_and_entropy(
        picked, targets, entropy_requires_grad=entropy_grad, temperature=temperature
    )
    return (logp, entropy) if with_entropy else logp


def reference_logprobs(
    model: torch.nn.Module,
    reference: torch.nn.Module | None,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_start: int | torch.Tensor,
    temperature: float,
    completion_length: int | None = None,
) -> torch.Tensor:
    """Log-probs under the reference policy: the base model (LoRA adapters disabled via
    peft's ``disable_adapter()``), or the frozen copy kept for full fine-tuning."""
    with torch.no_grad():
        if isinstance(model, PeftModel):
            with model.disable_adapter():
                return token_logprobs(
                    model,
                    input_ids,
                    attention_mask,
                    completion_start,
                    temperature,
                    completion_length,
                )
        if reference is None:
            raise ValueError(
                "full fine-tuning with beta > 0 needs a frozen reference model"
            )
        return token_logprobs(
            reference,
            input_ids,
            attention_mask,
            completion_start,
            temperature,
            completion_length,
        )


def base_model_name(model: torch.nn.Module) -> str:
    """The base model's path as recorded in its config (for the policy event)."""
    base: PreTrainedModel = (
        model.get_base_model() if isinstance(model, PeftModel) else model
    )
    return str(getattr(base.config, "_name_or_path", ""))
