"""The GPU check: learner step cost, generation speed at batch 64, and the learning sanity check.

Made for a machine with torch, transformers and peft but no network, Java or Kafka, so it
drives the pure cores directly: sandbox feedback (`streams.feedback.evaluate`), the raw
reshaping (`streams.reshaping.pipeline.reshape_group`) and `learner.trainer.Learner`.

  1. learner step   bf16 ``Learner.step`` with and without gradient checkpointing, each over
                    a plain forward/backward of the same batch (as benchmarks/learner_step.py);
  2. generation     transformers tokens/s at 64 sequences per call;
  3. sanity         base pass rates of training tasks (K samples each); the learnable band
                    (0 < rate < 1); raw GRPO steps on the band; then base and trained policy
                    sampled afresh (a seed the band was not chosen on) on the band, and the
                    paired per-task difference of pass rates with a bootstrap interval.

Every part is bounded by what is left of ``--budget-s``; a part that cannot fit says so.
Writes ``device_check.json`` under ``--out``. ``--tiny`` shrinks every size for a CPU smoke
test. Without a model folder a tiny random Llama with the given tokenizer stands in: the
timings then describe a toy and the sanity check cannot find a band (said in the output).

Usage: python benchmarks/device_check.py --tasks TASKS.jsonl [--model DIR | --tokenizer DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers.utils.logging import disable_progress_bar

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark's helpers
from learner_step import make_records, plain_step  # noqa: E402

from learner.batching import GroupAccumulator, plan_step  # noqa: E402
from learner.config import LearnerConfig  # noqa: E402
from learner.precision import autocast  # noqa: E402
from learner.trainer import Learner  # noqa: E402
from producers.evaluation.metrics import paired_bootstrap  # noqa: E402
from schemas.codec import new_event_fields  # noqa: E402
from producers.generator.backends.base import SamplingParams  # noqa: E402
from producers.generator.backends.hf import TransformersBackend  # noqa: E402
from producers.generator.model_store import build_tiny_model  # noqa: E402
from schemas.prompt import render_prompt  # noqa: E402
from producers.generator.service import rollout_records  # noqa: E402
from streams.feedback.evaluate import EvaluatorConfig, aevaluate_rollout  # noqa: E402
from streams.reshaping.config import load_preset  # noqa: E402
from streams.reshaping.pipeline import ReshapeState, reshape_group  # noqa: E402
from streams.reshaping.rewards import reward_raw  # noqa: E402
from streams.sandbox import SandboxConfig, SandboxPool  # noqa: E402


@dataclass(frozen=True)
class Scale:
    """Sizes of one check; GPU and TINY below."""

    step_groups: int
    step_group_size: int
    step_prompt_len: int
    step_completion_len: int
    step_repeats: int
    gen_prompts: int
    gen_k: int
    gen_tokens: int
    probe_tasks: int
    k: int
    max_new_tokens: int
    train_steps: int
    groups_per_step: int


GPU = Scale(step_groups=16, step_group_size=8, step_prompt_len=256, step_completion_len=256, step_repeats=3,
            gen_prompts=16, gen_k=4, gen_tokens=256, probe_tasks=96, k=8, max_new_tokens=192,
            train_steps=16, groups_per_step=8)  # fmt: skip
TINY = Scale(step_groups=2, step_group_size=2, step_prompt_len=16, step_completion_len=16, step_repeats=1,
             gen_prompts=2, gen_k=2, gen_tokens=8, probe_tasks=3, k=2, max_new_tokens=16,
             train_steps=1, groups_per_step=2)  # fmt: skip


class Budget:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def log(message: str) -> None:
    print(f"[device-check {time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------------------- 1. learner step
def learner_step_check(model_dir: Path, scale: Scale, vocab: int, device: torch.device) -> dict:
    """Learner.step over plain forward/backward, with and without gradient checkpointing."""
    out = {}
    records = make_records(scale.step_groups, scale.step_group_size, scale.step_prompt_len,
                           scale.step_completion_len, vocab, seed=0)  # fmt: skip
    for checkpointing in (False, True):
        if checkpointing and device.type != "cuda":
            out["checkpointing"] = {"skipped": "gradient checkpointing is used on CUDA only"}
            continue
        cfg = LearnerConfig(use_lora=True, groups_per_step=scale.step_groups, learning_rate=1e-5,
                            micro_batch_tokens=8192, gradient_checkpointing=checkpointing)  # fmt: skip
        learner = Learner(cfg, model_dir, device=device)
        plan = plan_step(records, 0, cfg.max_policy_lag, cfg.micro_batch_tokens)
        micro = [mb.to(device) for mb in plan.micro_batches]
        learner.step(records)  # warm-up: kernels, allocator
        _plain_seconds(learner, micro, device)
        steps, plains = [], []
        for _ in range(scale.step_repeats):  # interleaved, so a change of load hits both alike
            steps.append(learner.step(records).step_seconds)
            plains.append(_plain_seconds(learner, micro, device))
        tokens = sum(len(r["completion_token_ids"]) for r in records)
        key = "checkpointing" if checkpointing else "no_checkpointing"
        out[key] = {"step_s": min(steps), "plain_s": min(plains), "step_over_plain": min(steps) / min(plains),
                    "completion_tokens": tokens, "samples": len(records),
                    "peak_memory_gib": _peak_gib(device)}  # fmt: skip
        log(f"learner step ({key}): {min(steps):.3f} s, plain {min(plains):.3f} s, "
            f"ratio {min(steps) / min(plains):.3f}, {tokens} completion tokens")  # fmt: skip
        del learner, micro
        _free(device)
    if "step_s" in out.get("checkpointing", {}):
        out["checkpointing_over_none"] = out["checkpointing"]["step_s"] / out["no_checkpointing"]["step_s"]
    return out


def _plain_seconds(learner: Learner, micro, device: torch.device) -> float:
    """One plain forward/backward/AdamW step in the learner's own precision (bf16 autocast on CUDA)."""
    _sync(device)
    t0 = time.perf_counter()
    with autocast(device, learner.compute_dtype):
        plain_step(learner, micro, learner.cfg.temperature)
    _sync(device)
    return time.perf_counter() - t0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _peak_gib(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return round(peak, 2)


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------- 2. generation
def generation_check(backend: TransformersBackend, tasks: list[dict], scale: Scale) -> dict:
    prompts = [render_prompt(backend.tokenizer, t["buggy_code"]) for t in _cycle(tasks, scale.gen_prompts)]
    params = SamplingParams(n=scale.gen_k, temperature=1.0, max_new_tokens=scale.gen_tokens, seed=0)
    backend.generate(prompts[:1], params.model_copy(update={"max_new_tokens": 4}))  # warm-up
    _sync(backend.device)
    t0 = time.perf_counter()
    groups = backend.generate(prompts, params)
    _sync(backend.device)
    seconds = time.perf_counter() - t0
    tokens = sum(len(s.token_ids) for g in groups for s in g)
    result = {"sequences_per_call": len(prompts) * scale.gen_k, "tokens": tokens, "seconds": seconds,
              "tokens_per_s": tokens / seconds, "dtype": str(backend.dtype)}  # fmt: skip
    log(f"generation: {tokens} tokens from {result['sequences_per_call']} sequences in {seconds:.2f} s "
        f"= {tokens / seconds:.0f} tokens/s")  # fmt: skip
    return result


def _cycle(items: list, n: int) -> list:
    return [items[i % len(items)] for i in range(n)]


# ---------------------------------------------------------------------------- 3. sanity
def sample_feedback(backend: TransformersBackend, tasks: list[dict], k: int, max_new_tokens: int, seed: int,
                    pool: SandboxPool, evaluator: EvaluatorConfig, step: int) -> list[list[dict]]:
    """K rollouts per task from the backend's current policy, each merged with its sandbox feedback."""
    import asyncio

    prompts = [render_prompt(backend.tokenizer, t["buggy_code"]) for t in tasks]
    params = SamplingParams(n=k, temperature=1.0, max_new_tokens=max_new_tokens, seed=seed)
    groups = backend.generate(prompts, params)
    rollouts = [rollout_records(task_id=t["task_id"], group_id=f"s{step}-{seed}-{i}", prompt_token_ids=p,
                                samples=g, params=params, policy_version=backend.policy_version,
                                generator_id="device-check")
                for i, (t, p, g) in enumerate(zip(tasks, prompts, groups))]  # fmt: skip

    async def score():
        # the envelope (event id, event time) is what publishing would add
        jobs = [aevaluate_rollout(t, {**r, **new_event_fields()}, pool, evaluator)
                for t, group in zip(tasks, rollouts) for r in group]  # fmt: skip
        return await asyncio.gather(*jobs)

    # a feedback record carries its rollout's tokens, so it is what the learner trains on
    feedback = iter(asyncio.run(score()))
    return [[{**next(feedback), **new_event_fields()} for _ in group] for group in rollouts]


def passed(fb: dict) -> bool:
    """Every test passed, as the frontier and `reshaper eval` count it."""
    return reward_raw(fb["pass_fraction_runs"]) >= 1.0


def pass_rates(groups: list[list[dict]]) -> dict[str, float]:
    return {g[0]["task_id"]: sum(map(passed, g)) / len(g) for g in groups}


def sanity_check(backend: TransformersBackend, model_dir: Path, tasks: list[dict], scale: Scale,
                 budget: Budget, pool: SandboxPool, work: Path) -> dict:
    evaluator = EvaluatorConfig(adversarial_inputs=0, rename_check=False)
    probe = tasks[: scale.probe_tasks]
    t0 = time.monotonic()
    base = pass_rates(_chunked(backend, probe, scale, seed=0, pool=pool, evaluator=evaluator, step=0))
    probe_s = time.monotonic() - t0
    band = [t for t in probe if 0.0 < base[t["task_id"]] < 1.0]
    result = {"probe_tasks": len(probe), "k": scale.k, "probe_seconds": probe_s, "band_size": len(band),
              "all_fail": sum(r == 0.0 for r in base.values()), "all_pass": sum(r == 1.0 for r in base.values())}
    log(f"sanity: probe of {len(probe)} tasks x {scale.k} in {probe_s:.0f} s; band {len(band)}, "
        f"all-fail {result['all_fail']}, all-pass {result['all_pass']}")  # fmt: skip
    if not band:
        result["verdict"] = "no task in the band: nothing for raw GRPO to learn from at this scale"
        return result

    cfg = LearnerConfig(use_lora=True, learning_rate=2e-4, groups_per_step=scale.groups_per_step,
                        max_steps=scale.train_steps, micro_batch_tokens=8192, drop_uniform_groups=True,
                        publish_dir=work / "policy", checkpoint_dir=work / "ckpt")  # fmt: skip
    learner = Learner(cfg, model_dir, device=backend.device)
    reshaping, state = load_preset("raw"), ReshapeState()
    # dynamic sampling as the learner service does it: zero-variance groups are dropped and
    # the band is sampled again until a step holds groups_per_step groups
    accumulator = GroupAccumulator(cfg.groups_per_step, drop_uniform_groups=True)
    per_step, cursor = [], 0
    # the evaluation costs about two probes of the band; keep that much budget
    eval_cost = 2.5 * probe_s * len(band) / len(probe)
    for step in range(scale.train_steps):
        batch, sampled = None, []
        while batch is None and budget.left() > eval_cost + 30:
            chosen = [band[(cursor + i) % len(band)] for i in range(scale.groups_per_step)]
            cursor += scale.groups_per_step
            groups = sample_feedback(backend, chosen, scale.k, scale.max_new_tokens, seed=1000 + cursor,
                                     pool=pool, evaluator=evaluator, step=cursor)  # fmt: skip
            sampled += groups
            for group in groups:
                advantages, state = reshape_group(group, state, reshaping, step)
                for fb, adv in zip(group, advantages):
                    batch = accumulator.add({**fb, **adv}) or batch
        if batch is None:
            log(f"sanity: budget reached after {step} steps")
            break
        metrics = learner.step(batch)
        rate = sum(map(passed, (fb for g in sampled for fb in g))) / sum(len(g) for g in sampled)
        published = learner.publish()
        backend.load_policy(published["version"], published["location"])
        per_step.append({"step": step + 1, "train_pass_rate": rate, "sampled_groups": len(sampled),
                         "trained_groups": metrics.num_groups, "dropped_groups": accumulator.dropped_groups,
                         "kl_ref": metrics.loss.kl_ref if metrics.loss else None,
                         "step_s": metrics.step_seconds})  # fmt: skip
        log(f"sanity step {step + 1}: pass rate {rate:.3f} over {len(sampled)} groups, "
            f"trained {metrics.num_groups}, dropped so far {accumulator.dropped_groups}")  # fmt: skip
    result["steps"] = per_step
    trained_dir = Path(backend.policy_location)

    # fresh samples of both policies, on a seed the band was not chosen with
    after = pass_rates(_chunked(backend, band, scale, seed=7, pool=pool, evaluator=evaluator, step=-1))
    backend.load_policy(0, str(model_dir))
    before = pass_rates(_chunked(backend, band, scale, seed=7, pool=pool, evaluator=evaluator, step=-2))
    ids = [t["task_id"] for t in band]
    diff = paired_bootstrap([before[i] for i in ids], [after[i] for i in ids])
    result.update({"trained_policy": str(trained_dir), "band_pass_rate_base": sum(before.values()) / len(ids),
                   "band_pass_rate_trained": sum(after.values()) / len(ids),
                   "difference": {"mean": diff.mean, "low": diff.low, "high": diff.high, "n": diff.n}})  # fmt: skip
    result["verdict"] = ("raised" if diff.low > 0 else "lowered" if diff.high < 0 else "no clear change")
    log(f"sanity: band pass rate base {result['band_pass_rate_base']:.3f} -> trained "
        f"{result['band_pass_rate_trained']:.3f}; trained - base {diff} -> {result['verdict']}")  # fmt: skip
    return result


def _chunked(backend, tasks, scale: Scale, **kwargs) -> list[list[dict]]:
    """sample_feedback over tasks a generation batch (64 sequences) at a time."""
    per_call = max(1, 64 // scale.k)
    out = []
    for start in range(0, len(tasks), per_call):
        out += sample_feedback(backend, tasks[start : start + per_call], scale.k, scale.max_new_tokens, **kwargs)
    return out


# ---------------------------------------------------------------------------- main
def load_tasks(path: Path, split: str) -> list[dict]:
    if not path.is_file():
        raise SystemExit(f"tasks file not found: {path}")
    tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chosen = [t for t in tasks if t.get("split", split) == split]
    if not chosen:
        raise SystemExit(f"no {split!r} tasks in {path}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, required=True, help="corpus JSONL (its train split is used)")
    parser.add_argument("--model", type=Path, help="Hugging Face model folder (the policy's base)")
    parser.add_argument("--tokenizer", type=Path, help="without --model: tokenizer of the tiny stand-in")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/device-check")))
    parser.add_argument("--budget-s", type=float, default=450.0, help="wall time for all three parts")
    parser.add_argument("--tiny", action="store_true", help="CPU smoke-test sizes")
    parser.add_argument("--sandbox-workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--isolation", choices=["bwrap", "rlimits-only"],
                        default="bwrap" if shutil.which("bwrap") else "rlimits-only")
    parser.add_argument("--skip", nargs="*", default=[], choices=["step", "generation", "sanity"])
    for name in ("probe_tasks", "k", "max_new_tokens", "train_steps", "groups_per_step"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help="override the scale's value")
    args = parser.parse_args()
    budget = Budget(args.budget_s)
    disable_progress_bar()
    overrides = {k: v for k in Scale.__dataclass_fields__ if (v := getattr(args, k, None)) is not None}
    scale = dataclasses.replace(TINY if args.tiny else GPU, **overrides)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    work = Path(tempfile.mkdtemp(prefix="device_check_"))
    tasks = load_tasks(args.tasks, "train")

    if args.model is not None:
        model_dir, stand_in = args.model, False
    elif args.tokenizer is not None:
        model_dir, stand_in = build_tiny_model(work / "tiny-llama", args.tokenizer), True
    else:
        raise SystemExit("give --model DIR, or --tokenizer DIR for the tiny stand-in")
    report: dict = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                    "torch": torch.__version__, "model": str(args.model or "tiny random llama (smoke only)"),
                    "scale": dataclasses.asdict(scale), "isolation": args.isolation}  # fmt: skip
    log(f"device {report['device']}, model {report['model']}, {len(tasks)} train tasks, budget {args.budget_s:.0f} s")

    vocab = _vocab_size(model_dir)
    if "step" not in args.skip:
        report["learner_step"] = learner_step_check(model_dir, scale, vocab, device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    backend = TransformersBackend(model_dir, device=str(device), dtype=dtype, max_batch_sequences=64)
    if "generation" not in args.skip:
        report["generation"] = generation_check(backend, tasks, scale)
    if "sanity" not in args.skip:
        if budget.left() < 60:
            report["sanity"] = {"skipped": f"{budget.left():.0f} s of the budget left"}
        else:
            sandbox = SandboxConfig(workers=args.sandbox_workers, isolation=args.isolation)
            with SandboxPool(sandbox) as pool:
                report["sanity"] = sanity_check(backend, model_dir, tasks, scale, budget, pool, work)
        if stand_in:
            report["sanity"]["note"] = "tiny random stand-in: smoke only, not a learning result"
    report["seconds"] = args.budget_s - budget.left()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "device_check.json"
    path.write_text(json.dumps(report, indent=2, default=str))
    log(f"done in {report['seconds']:.0f} s; wrote {path}")


def _vocab_size(model_dir: Path) -> int:
    return int(json.loads((Path(model_dir) / "config.json").read_text())["vocab_size"])


if __name__ == "__main__":
    main()
