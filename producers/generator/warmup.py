"""Supervised warm-up: teach the base model the repair format on (buggy -> fixed) pairs
before reinforcement learning starts, so that early groups are not all zero reward.

The prompt is exactly what the generator renders (prompt.render_task_prompt) and the target is
the reference function in a code fence followed by the end-of-turn token; the loss covers
the target tokens only. The result is a plain Hugging Face directory (a LoRA, if used, is
merged in) that transformers, peft and vLLM load as a base model.

A plain training loop rather than trl's SFTTrainer: for a few hundred pairs it is a screen
of code, keeps the completion-only masking visible next to the prompt it must match, and
avoids the Trainer's run-directory and accelerate set-up.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import torch
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer, get_linear_schedule_with_warmup

from producers.generator.backends.hf import pick_device
from producers.generator.model_store import write_manifest
from schemas.prompt import PROMPT_TEMPLATE_VERSION, completion_target, render_task_prompt

IGNORE_INDEX = -100  # label value torch's cross-entropy skips


class WarmupConfig(BaseModel):
    """Knobs of the supervised warm-up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epochs: int = Field(1, ge=1, description="Passes over the training pairs.")
    learning_rate: float = Field(5e-5, gt=0, description="Peak AdamW learning rate (linear decay after warm-up steps).")
    warmup_steps: int = Field(0, ge=0, description="Linear learning-rate warm-up steps.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    batch_size: int = Field(4, ge=1, description="Pairs per optimiser step.")
    max_length: int = Field(1024, ge=8, description="Pairs longer than this (prompt + target tokens) are skipped.")
    validation_fraction: float = Field(
        0.1, ge=0, lt=1, description="Share of the pairs held out for validation loss when none are given."
    )
    lora_rank: int = Field(0, ge=0, description="0 trains all weights; >0 trains a LoRA of this rank and merges it.")
    lora_alpha: int = Field(16, ge=1, description="LoRA scaling numerator (only with lora_rank > 0).")
    include_error_context: bool = Field(
        False, description="Render the pairs' visible tests and error context into the prompt (as the generator does).")
    seed: int = Field(0, ge=0, description="Seed of the shuffle, the held-out split and the LoRA init.")
    device: str = Field("auto", description="Torch device; auto picks cuda if present.")


@dataclass(frozen=True)
class RepairPair:
    """One supervised example: buggy code in, reference code out."""

    buggy_code: str
    reference_code: str
    error_context: str | None = None
    visible_tests: tuple[str, ...] = ()


@dataclass
class WarmupMetrics:
    val_loss_before: float
    val_loss_after: float
    train_loss_first: float
    train_loss_last: float
    steps: int
    train_pairs: int
    val_pairs: int
    skipped_pairs: int
    seconds: float


def pairs_from_tasks(tasks: Iterable[dict], splits: tuple[str, ...] = ("train",)) -> list[RepairPair]:
    """RepairPairs from corpus task dicts (`buggy_code`, `reference_code`, `split`) of the given splits."""
    return [
        RepairPair(t["buggy_code"], t["reference_code"], t.get("error_context"), tuple(t.get("visible_tests", ())))
        for t in tasks
        if t.get("split", "train") in splits
    ]


def encode_pair(tokenizer, pair: RepairPair, include_error_context: bool = False) -> tuple[list[int], list[int]]:
    """(input_ids, labels) with the prompt positions masked out of the labels."""
    task = {"buggy_code": pair.buggy_code, "error_context": pair.error_context, "visible_tests": pair.visible_tests}
    prompt = render_task_prompt(tokenizer, task, include_error_context)
    target = tokenizer(completion_target(pair.reference_code), add_special_tokens=False)["input_ids"]
    target = target + [tokenizer.eos_token_id]
    return prompt + target, [IGNORE_INDEX] * len(prompt) + target


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded batch; padding is masked from attention and labels."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (ids, labs) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(labs)] = torch.tensor(labs)
        attention_mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention_mask}


def completion_loss_sum(model, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Summed next-token cross-entropy over the target tokens of `batch`, and their count.

    The output layer runs on the target positions only: with a 49k vocabulary it is most of
    the cost, and the prompt positions carry no loss.
    """
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft keeps LoRA layers inside
    hidden = causal_lm.get_decoder()(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    targets = batch["labels"][:, 1:]
    keep = targets != IGNORE_INDEX
    logits = causal_lm.get_output_embeddings()(hidden[:, :-1][keep])
    loss = torch.nn.functional.cross_entropy(logits.float(), targets[keep], reduction="sum")
    return loss, int(keep.sum())


@torch.no_grad()
def validation_loss(model, examples, pad_id: int, batch_size: int, device: torch.device) -> float:
    """Mean per-token target loss over `examples` (NaN when there are none)."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(examples), batch_size):
        batch = {k: v.to(device) for k, v in collate(examples[start : start + batch_size], pad_id).items()}
        loss, n = completion_loss_sum(model, batch)
        total, count = total + float(loss), count + n
    return total / count if count else float("nan")


def split_pairs(pairs: list[RepairPair], fraction: float, seed: int) -> tuple[list[RepairPair], list[RepairPair]]:
    """(train, validation) by a seeded shuffle; at least one validation pair when fraction > 0."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(fraction * len(pairs))) if fraction > 0 and len(pairs) > 1 else 0
    return [pairs[i] for i in order[n_val:]], [pairs[i] for i in order[:n_val]]


def warmup(
    model_dir: str | Path,
    pairs: list[RepairPair],
    out_dir: str | Path,
    cfg: WarmupConfig = WarmupConfig(),
    validation_pairs: list[RepairPair] | None = None,
) -> WarmupMetrics:
    """Fine-tune `model_dir` on `pairs`, save the merged model to `out_dir`, return the losses."""
    started = time.perf_counter()
    if validation_pairs is None:
        pairs, validation_pairs = split_pairs(list(pairs), cfg.validation_fraction, cfg.seed)
    if not pairs:
        raise ValueError("warm-up needs at least one training pair")
    device = pick_device(cfg.device)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def encode_all(items):
        encoded = [encode_pair(tokenizer, p, cfg.include_error_context) for p in items]
        return [e for e in encoded if len(e[0]) <= cfg.max_length]

    train, val = encode_all(pairs), encode_all(validation_pairs)
    skipped = len(pairs) + len(validation_pairs) - len(train) - len(val)
    if not train:
        raise ValueError(f"every training pair is longer than max_length={cfg.max_length}")

    torch.manual_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device)
    if cfg.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, lora)

    val_before = validation_loss(model, val, pad_id, cfg.batch_size, device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    steps_per_epoch = -(-len(train) // cfg.batch_size)
    total_steps = cfg.epochs * steps_per_epoch
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, total_steps)
    rng = random.Random(cfg.seed)
    losses: list[float] = []
    with tqdm(total=total_steps, desc="warm-up", unit="step") as bar:
        for _ in range(cfg.epochs):
            order = list(range(len(train)))
            rng.shuffle(order)
            for start in range(0, len(order), cfg.batch_size):
                model.train()
                examples = [train[i] for i in order[start : start + cfg.batch_size]]
                batch = {k: v.to(device) for k, v in collate(examples, pad_id).items()}
                loss_sum, n_tokens = completion_loss_sum(model, batch)
                loss = loss_sum / max(n_tokens, 1)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(trainable, 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                losses.append(loss.item())
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
                bar.update()
    val_after = validation_loss(model, val, pad_id, cfg.batch_size, device)

    if cfg.lora_rank > 0:
        model = model.merge_and_unload()
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    metrics = WarmupMetrics(
        val_loss_before=val_before,
        val_loss_after=val_after,
        train_loss_first=losses[0],
        train_loss_last=losses[-1],
        steps=len(losses),
        train_pairs=len(train),
        val_pairs=len(val),
        skipped_pairs=skipped,
        seconds=time.perf_counter() - started,
    )
    write_manifest(out_dir, f"warmup({model_dir}, {PROMPT_TEMPLATE_VERSION})", "")
    (out_dir / "warmup_metrics.json").write_text(
        json.dumps({**asdict(metrics), "config": cfg.model_dump()}, indent=2) + "\n"
    )
    return metrics


def main(
    model_dir: Path,
    tasks_jsonl: Path,
    out_dir: Path,
    epochs: int = 1,
    learning_rate: float = 5e-5,
    batch_size: int = 4,
    lora_rank: int = 0,
    device: str = "auto",
) -> None:
    """Warm up MODEL_DIR on the train split of TASKS_JSONL (corpus tasks) into OUT_DIR."""
    tasks = [json.loads(line) for line in tasks_jsonl.read_text().splitlines() if line.strip()]
    validation = pairs_from_tasks(tasks, splits=("validation", "val", "dev"))
    cfg = WarmupConfig(
        epochs=epochs, learning_rate=learning_rate, batch_size=batch_size, lora_rank=lora_rank, device=device
    )
    metrics = warmup(model_dir, pairs_from_tasks(tasks), out_dir, cfg, validation_pairs=validation or None)
    print(json.dumps(asdict(metrics), indent=2))


if __name__ == "__main__":
    import typer

    typer.run(main)
