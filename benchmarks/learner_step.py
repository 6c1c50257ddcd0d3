"""Overhead of one learner step over a plain forward/backward of the same model and batch.

Prints five ratios:
  step / plain      time of ``Learner.step`` with whole rows (batching, loss, stats, AdamW,
                    schedule) over a bare ``-(A * log pi)`` forward + backward + AdamW step of
                    the same rows; goal <= 1.1;
  shared / whole    ``Learner.step`` with each group's prompt run once
                    (``share_prompt_forward``, the default) over the step on whole rows;
  batch / step      share of the step spent assembling micro-batches from records.
  bf16 / float32    the step (shared prompts) under bf16 autocast over the same step in float32,
                    with each precision's attention kernel (``learner/precision.py``); fast only
                    where the CPU multiplies in bf16 (avx512_bf16, AMX).
  KL measured / not the step (shared prompts, float32, beta 0) that measures kl_ref, with one
                    reference pass without gradient (adapters off, or the frozen copy with
                    --full), over the same step that skips it (``kl_measure_every`` 1 vs 0);
                    also as a ratio of process CPU time, steadier on a shared host.

The other ratios are of steps that do not measure the KL. All but bf16 / float32 run in
float32, whatever the CPU, so they compare across machines.

Usage: python benchmarks/learner_step.py [--hidden 128 --layers 4 --vocab 4096 ...]
       python benchmarks/learner_step.py --model .cache/models/smollm2-135m-instruct \
           --groups 2 --prompt-len 200 --completion-len 160 --micro-batch-tokens 8192 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

import torch
from transformers.utils.logging import disable_progress_bar

from learner.batching import plan_step
from learner.config import LearnerConfig
from learner.precision import NATIVE_BF16_CPU_FLAGS, cpu_flags
from learner.tiny import build_tiny_llama, tiny_llama_config
from learner.trainer import Learner


def make_records(
    groups: int,
    group_size: int,
    prompt_len: int,
    completion_len: int,
    vocab: int,
    seed: int,
):
    rng = random.Random(seed)
    records = []
    for g in range(groups):
        prompt = [rng.randrange(3, vocab) for _ in range(prompt_len)]
        for i in range(group_size):
            n = rng.randint(completion_len // 2, completion_len)
            records.append({
                "group_id": f"g{g}", "sample_index": i, "group_members": group_size, "prompt_token_ids": prompt,
                "completion_token_ids": [rng.randrange(3, vocab) for _ in range(n)],
                "behaviour_logprobs": [-rng.uniform(5.0, 9.0) for _ in range(n)],
                "advantage": rng.gauss(0.0, 1.0), "policy_version": 0, "finish_reason": "stop",
            })  # fmt: skip
    return records


def plain_step(learner: Learner, micro_batches, temperature: float) -> None:
    """Forward, -(A * log pi) on the completion tokens, backward, clip, AdamW: nothing else.
    Only completion positions go through log-softmax, as in the learner, so the ratio
    measures the learner's own overhead (entropy, statistics, batching, schedule)."""
    model, opt = learner.model, learner.optimizer
    opt.zero_grad(set_to_none=True)
    total = sum(int(mb.completion_mask.sum()) for mb in micro_batches)
    for mb in micro_batches:
        logits = model(input_ids=mb.input_ids, attention_mask=mb.attention_mask).logits
        cols = torch.arange(mb.completion_mask.shape[1], device=logits.device)
        target = (mb.completion_start.unsqueeze(-1) + cols).clamp(
            max=logits.shape[1] - 1
        )
        picked = logits.gather(
            1, (target - 1).unsqueeze(-1).expand(-1, -1, logits.shape[-1])
        ).float()
        logp = torch.log_softmax(picked / temperature, -1).gather(
            -1, mb.input_ids.gather(1, target)[..., None]
        )[..., 0]
        loss = -(mb.advantages.unsqueeze(-1) * logp * mb.completion_mask).sum() / total
        loss.backward()
    torch.nn.utils.clip_grad_norm_(
        [p for p in model.parameters() if p.requires_grad], learner.cfg.max_grad_norm
    )
    opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=None, help="a Hugging Face model folder instead of a tiny random Llama")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--completion-len", type=int, default=64)
    parser.add_argument("--micro-batch-tokens", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--full", action="store_true", help="full fine-tuning instead of LoRA"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1 is least disturbed by load)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    disable_progress_bar()

    model_dir = args.model or build_tiny_llama(
        tempfile.mkdtemp(prefix="bench_llama_"),
        config=tiny_llama_config(
            args.vocab, args.hidden, args.layers, num_attention_heads=4
        ),
    )
    cfg = LearnerConfig(
        use_lora=not args.full, groups_per_step=args.groups, micro_batch_tokens=args.micro_batch_tokens,
        learning_rate=1e-5, precision="float32",
    )  # fmt: skip
    learner = Learner(cfg, model_dir)  # kl_measure_every is set per step (timed_step)
    bf16_learner = Learner(cfg.model_copy(update={"precision": "bfloat16", "kl_measure_every": 0}), model_dir)
    records = make_records(
        args.groups,
        args.group_size,
        args.prompt_len,
        args.completion_len,
        learner.model.config.vocab_size,
        cfg.seed,
    )
    micro = plan_step(
        records, 0, cfg.max_policy_lag, cfg.micro_batch_tokens
    ).micro_batches
    micro = [mb.to(learner.device) for mb in micro]

    cpu_seconds: dict[bool, list[float]] = {False: [], True: []}  # shared-prompt steps by measure_kl

    def timed_step(share: bool, measure_kl: bool = False) -> tuple[float, float]:
        learner.cfg.share_prompt_forward = share
        learner.cfg.kl_measure_every = 1 if measure_kl else 0
        cpu0 = time.process_time()
        metrics = learner.step(records)
        if share:
            cpu_seconds[measure_kl].append(time.process_time() - cpu0)
        assert metrics.kl_measured == measure_kl
        return metrics.step_seconds, metrics.batch_seconds / metrics.step_seconds

    timed_step(False)  # warm-up every path once
    timed_step(True)
    timed_step(True, measure_kl=True)
    plain_step(learner, micro, cfg.temperature)
    bf16_learner.step(records)
    for warm_up in cpu_seconds.values():  # left out of the figures
        warm_up.clear()
    step_times, shared_times, plain_times, batch_shares, bf16_times, kl_times = [], [], [], [], [], []
    for _ in range(
        args.repeats
    ):  # interleaved, so load changes on the host hit every path alike
        seconds, share = timed_step(False)
        step_times.append(seconds)
        batch_shares.append(share)
        shared_times.append(timed_step(True)[0])
        kl_times.append(timed_step(True, measure_kl=True)[0])
        t0 = time.perf_counter()
        plain_step(learner, micro, cfg.temperature)
        plain_times.append(time.perf_counter() - t0)
        bf16_times.append(bf16_learner.step(records).step_seconds)

    tokens = sum(len(r["completion_token_ids"]) for r in records)
    print(
        f"model: {args.model or f'llama hidden={args.hidden} layers={args.layers} vocab={args.vocab}'} "
        f"{'full' if args.full else 'LoRA'}; device={learner.device}; torch threads={torch.get_num_threads()}"
    )
    print(
        f"batch: {len(records)} samples in {args.groups} groups, {tokens} completion tokens, "
        f"{len(micro)} micro-batches; {args.repeats} repeats"
    )
    # The minimum is the least noisy estimate of the intrinsic cost on a loaded host.
    print(
        f"step / plain forward-backward:  {min(step_times) / min(plain_times):.3f} (min)  "
        f"{statistics.median(step_times) / statistics.median(plain_times):.3f} (median)"
    )
    print(
        f"shared prompts / whole rows:    {min(shared_times) / min(step_times):.3f} (min)  "
        f"{statistics.median(shared_times) / statistics.median(step_times):.3f} (median)   "
        f"step {statistics.median(shared_times):.2f} s vs {statistics.median(step_times):.2f} s"
    )
    print(
        f"batch assembly / step:          {statistics.median(batch_shares):.4f} (median)"
    )
    native = sorted(NATIVE_BF16_CPU_FLAGS & cpu_flags()) or "none: bf16 is emulated"
    print(
        f"bf16 / float32 (shared):        {min(bf16_times) / min(shared_times):.3f} (min)  "
        f"{statistics.median(bf16_times) / statistics.median(shared_times):.3f} (median)   "
        f"step {statistics.median(bf16_times):.2f} s vs {statistics.median(shared_times):.2f} s; "
        f"native bf16 flags: {native}"
    )
    # Process CPU time as well: with one torch thread it is the work the step did, which
    # other jobs on a shared host do not stretch as they stretch wall time.
    cpu_kl, cpu_plain = statistics.median(cpu_seconds[True]), statistics.median(cpu_seconds[False])
    print(
        f"KL measured / not (shared):     {min(kl_times) / min(shared_times):.3f} (min)  "
        f"{statistics.median(kl_times) / statistics.median(shared_times):.3f} (median)   "
        f"{cpu_kl / cpu_plain:.3f} (median CPU time)   "
        f"step {statistics.median(kl_times):.2f} s vs {statistics.median(shared_times):.2f} s"
    )


if __name__ == "__main__":
    main()
