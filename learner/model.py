"""Policy model: load a local causal LM, wrap it for LoRA or full fine-tuning, and score
sampled tokens.

Weights stay fp32. The passes run under bf16 autocast where the hardware multiplies in bf16
(`learner/precision.py`: CUDA, and CPUs with avx512_bf16 or AMX; fp32 master weights keep
small LoRA updates from being rounded away), in plain fp32 elsewhere; CUDA adds gradient
checkpointing.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, PreTrainedModel
from trl.trainer.utils import selective_log_softmax_and_entropy

from learner.config import LearnerConfig
from learner.precision import attention_implementation, autocast, autocast_dtype


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
        model_dir, local_files_only=True, dtype=torch.float32,
        attn_implementation=attention_implementation(device, autocast_dtype(cfg.precision, device)),
    )  # fmt: skip
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
    """A frozen copy of the initial weights for full fine-tuning, when some step uses the
    reference (a KL term, or kl_ref measured at beta 0); LoRA needs none (adapters off)."""
    if cfg.use_lora or not cfg.needs_reference:
        return None
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_start: int | torch.Tensor,
    temperature: float,
    completion_length: int | None = None,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    share_prompts: bool = False,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of the completion tokens under ``model`` at ``temperature``.

    Args:
        input_ids, attention_mask: ``[B, L]`` rows of prompt + completion, right-padded.
        completion_start: index of the first completion token, one int or ``[B]``.
        completion_length: ``T``, completion columns to return (default ``L - min(start)``).
        share_prompts: run each distinct prompt once and its rows' completions on its
            key/value cache (``shared_prompt_logits``); the same values, less work.
        compute_dtype: autocast dtype of the forward (``learner.precision``); None: float32.
    Returns:
        ``[B, T]`` log-probs, column ``j`` scoring the ``j``-th completion token (columns past
        a row's completion hold finite values of no meaning; mask them). With
        ``with_entropy``, also the ``[B, T]`` entropies of the tempered distribution.
    """
    batch, length = input_ids.shape
    start = torch.as_tensor(completion_start, device=input_ids.device).expand(batch).long()
    if completion_length is None:
        completion_length = length - int(start.min())
    # Gradient checkpointing makes the model drop its key/value cache in training passes.
    if share_prompts and not getattr(model, "is_gradient_checkpointing", False):
        logits_of = shared_prompt_logits
    else:
        logits_of = full_row_logits
    with autocast(input_ids.device, compute_dtype):
        picked, targets = logits_of(model, input_ids, attention_mask, start, completion_length)
    logp, entropy = selective_log_softmax_and_entropy(
        picked, targets, entropy_requires_grad=entropy_grad, temperature=temperature
    )
    return (logp, entropy) if with_entropy else logp


def full_row_logits(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    start: torch.Tensor,
    completion_length: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, T, V]`` float32 logits predicting each completion token, and the ``[B, T]``
    tokens they predict, from one forward pass over every whole row."""
    length = input_ids.shape[1]
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    # Position p predicts token p + 1: completion token j sits at start + j, predicted at start + j - 1.
    cols = torch.arange(completion_length, device=input_ids.device)
    target_pos = (start.unsqueeze(-1) + cols).clamp(max=length - 1)  # [B, T]
    predict_pos = target_pos - 1
    vocab = logits.shape[-1]
    picked = logits.gather(1, predict_pos.unsqueeze(-1).expand(-1, -1, vocab)).float()
    return picked, input_ids.gather(1, target_pos)


def shared_prompt_logits(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    start: torch.Tensor,
    completion_length: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """What ``full_row_logits`` returns, with each distinct prompt run once.

    The K rows of a GRPO group share their prompt, and the prompt's activations do not
    depend on what follows it (causal attention), so the prompt is run once with its
    key/value cache kept, the cache is repeated for the group's rows, and only the
    completions are run on top of it, each up to the group's longest. Gradients flow back
    through the repeated cache into the single prompt pass. Work per group falls from
    ``K x (longest row of the micro-batch)`` token passes to ``prompt + K x (longest
    completion of the group)``, and the vocabulary projection runs on completion positions
    only. Rows are grouped by their prompt tokens, so any batch is valid input.
    """
    batch, _ = input_ids.shape
    device = input_ids.device
    groups: dict[tuple, list[int]] = {}
    for row in range(batch):
        p = int(start[row])
        groups.setdefault((p, *input_ids[row, :p].tolist()), []).append(row)

    pieces, targets, order = [], [], []
    for (p, *_), rows in groups.items():
        index = torch.tensor(rows, device=device)
        k = len(rows)
        span = max(1, int(attention_mask[index].sum(1).max()) - p)  # the group's longest completion
        completion = input_ids[index, p : p + span]  # [k, span]; empty only past the last column
        prompt = model(input_ids=input_ids[index[:1], :p], use_cache=True, logits_to_keep=1)
        picked = prompt.logits.expand(k, -1, -1)  # the prompt's last position predicts token 0
        if span > 1:  # completion position j predicts token j + 1
            cache = prompt.past_key_values
            cache.batch_repeat_interleave(k)
            positions = torch.arange(p, p + span, device=device).expand(k, -1)
            rest = model(
                input_ids=completion, attention_mask=attention_mask[index, : p + span],
                past_key_values=cache, position_ids=positions, use_cache=False,
            ).logits  # fmt: skip
            picked = torch.cat([picked, rest[:, : span - 1]], dim=1)
        if completion.shape[1] == 0:  # rows of only a prompt: nothing to score, a placeholder target
            completion = input_ids[index, p - 1 : p]
        picked = picked.float()
        pieces.append(_fit_columns(picked, completion_length))
        targets.append(_fit_columns(completion, completion_length))
        order += rows
    inverse = torch.empty(batch, dtype=torch.long, device=device)
    inverse[torch.tensor(order, device=device)] = torch.arange(batch, device=device)
    return torch.cat(pieces)[inverse], torch.cat(targets)[inverse]


def _fit_columns(x: torch.Tensor, width: int) -> torch.Tensor:
    """``x`` cut or padded (repeating its last column) to ``width`` columns along dim 1."""
    if x.shape[1] >= width:
        return x[:, :width]
    return torch.cat([x, x[:, -1:].expand(-1, width - x.shape[1], *x.shape[2:])], dim=1)


def reference_logprobs(
    model: torch.nn.Module,
    reference: torch.nn.Module | None,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_start: int | torch.Tensor,
    temperature: float,
    completion_length: int | None = None,
    share_prompts: bool = False,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Log-probs under the reference policy: the base model (LoRA adapters disabled via
    peft's ``disable_adapter()``), or the frozen copy kept for full fine-tuning."""
    args = (input_ids, attention_mask, completion_start, temperature, completion_length)
    options = {"share_prompts": share_prompts, "compute_dtype": compute_dtype}
    with torch.no_grad():
        if isinstance(model, PeftModel):
            with model.disable_adapter():
                return token_logprobs(model, *args, **options)
        if reference is None:
            raise ValueError(
                "full fine-tuning needs a frozen reference model to score the reference"
            )
        return token_logprobs(reference, *args, **options)


def base_model_name(model: torch.nn.Module) -> str:
    """The base model's path as recorded in its config (for the policy event)."""
    base: PreTrainedModel = (
        model.get_base_model() if isinstance(model, PeftModel) else model
    )
    return str(getattr(base.config, "_name_or_path", ""))
