"""Rollout throughput of the CPU generation backends, alone and inside the whole loop.

1. Generator alone: the same batches of corpus prompts (K samples each, as the run samples
   them) through the transformers backend (the baseline), the ctranslate2 backend in each
   precision, the vLLM backend (in the interpreter that has vLLM: on a CPU the environment
   of infra/vllm_cpu/setup.sh, skipped with a note when there is none), and, if
   llama-cpp-python is installed, bare llama.cpp on the shipped GGUF (an
   engine candidate, measured for the choice; no backend wraps it). Tokens/s, rollouts/min,
   and the behaviour-vs-learner mismatch of each backend's logprobs (mean |delta logp| per
   token against the transformers forward pass, the learner's view).
2. Hot-swap: the ctranslate2 backend loading one LoRA adapter (merge + convert).
3. With --loop: `reshaper run` once per backend (transformers, ctranslate2, and vLLM where
   it can run) with the same config (own broker, chDB, learner and sink running), its steady
   rollouts/min (start-up excluded), time to first rollout, and the learner's mismatch
   figures (IS weights, truncated share).

    python benchmarks/loop_throughput.py --prompts 8 --loop --steps 4
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from producers.generator.backends import SamplingParams
from producers.generator.model_store import cached_smollm2, smollm2_gguf_path
from schemas.prompt import render_prompt, render_prompt_text


def corpus_functions(n: int, seed: int) -> list[str]:
    """The buggy code of the first n train tasks of the run's corpus (built if not cached, so
    the loop runs below measure the loop, not the build)."""
    from producers.corpus import CorpusBuildConfig, cached_build, read_tasks

    tasks = [t for t in read_tasks(cached_build(CorpusBuildConfig(seed=seed))) if t["split"] == "train"]
    return [t["buggy_code"] for t in tasks[:n]]


def mean_abs_gap(model, prompts, groups, temperature: float) -> float:
    """Mean |log pi(learner) - log mu(backend)| per sampled token."""
    total, count = 0.0, 0
    for prompt, group in zip(prompts, groups):
        for sample in group:
            ids = torch.tensor([prompt + sample.token_ids])
            with torch.no_grad():
                logits = model(ids).logits[0, len(prompt) - 1 : -1]
            logp = torch.log_softmax(logits / temperature, dim=-1)
            learner = logp.gather(-1, torch.tensor(sample.token_ids)[:, None]).squeeze(-1)
            total += (learner - torch.tensor(sample.logprobs)).abs().sum().item()
            count += len(sample.token_ids)
    return total / max(count, 1)


def time_backend(backend, prompts, params: SamplingParams, per_call: int) -> tuple[dict, list]:
    backend.generate(prompts[:1], params.model_copy(update={"max_new_tokens": 4}))  # warm-up
    groups, start = [], time.perf_counter()
    for i in range(0, len(prompts), per_call):
        groups.extend(backend.generate(prompts[i : i + per_call], params))
    seconds = time.perf_counter() - start
    tokens = sum(len(s.token_ids) for g in groups for s in g)
    rollouts = sum(len(g) for g in groups)
    return {"seconds": round(seconds, 1), "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
            "rollouts_per_min": round(rollouts * 60 / seconds, 1)}, groups


def time_llama_cpp(code: list[str], params: SamplingParams, threads: int) -> dict | None:
    """Bare llama.cpp on the shipped GGUF (Q4_1), one completion at a time as it serves them."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cached_smollm2())
    llm = Llama(model_path=str(smollm2_gguf_path()), n_ctx=2048, n_threads=threads or None, verbose=False,
                seed=params.seed or 0)
    texts = [render_prompt_text(tokenizer, c) for c in code]
    llm.create_completion(texts[0], max_tokens=4)  # warm-up
    tokens, start = 0, time.perf_counter()
    for text in texts:
        for _ in range(params.n):
            out = llm.create_completion(text, max_tokens=params.max_new_tokens, temperature=params.temperature,
                                        top_p=params.top_p, top_k=0, stop=["<|im_end|>"])
            tokens += out["usage"]["completion_tokens"]
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 1), "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
            "rollouts_per_min": round(len(texts) * params.n * 60 / seconds, 1)}


def vllm_alone(args, model_dir: Path, prompts: list[list[int]], params: SamplingParams,
               env: dict[str, str] | None = None) -> tuple[dict, list] | None:
    """The vLLM backend timed like the others, in the interpreter that has vLLM (this script
    run again there with --vllm-alone, with `env` added to its environment); None when no
    such interpreter is installed."""
    import os
    import subprocess

    from infra.platform.vllm_env import VllmEnvironmentMissing, generator_python
    from producers.generator.backends import Sample

    try:
        python = generator_python("vllm")
    except VllmEnvironmentMissing as exc:
        print(f"  vllm: not measured ({exc})", flush=True)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.json"
        job.write_text(json.dumps({"model_dir": str(model_dir), "prompts": prompts, "params": params.model_dump(),
                                   "per_call": args.groups_per_call, "threads": args.threads,
                                   "kv_cache_gib": getattr(args, "kv_cache_gib", 1)}))
        subprocess.run([python, __file__, "--vllm-alone", str(job)], check=True, env={**os.environ, **(env or {})})
        done = json.loads(job.read_text())
    started = done.pop("engine_start_s")
    groups = [[Sample(**s) for s in group] for group in done.pop("groups")]
    return dict(done, engine_start_s=round(started, 1)), groups


def vllm_alone_here(job_path: str) -> None:
    """The --vllm-alone side: start the engine, time it, write figures and samples back."""
    from dataclasses import asdict

    from producers.generator.backends.vllm_backend import VLLMBackend

    job = json.loads(Path(job_path).read_text())
    start = time.perf_counter()
    backend = VLLMBackend(job["model_dir"], threads=job["threads"], kv_cache_gib=job["kv_cache_gib"])
    started = time.perf_counter() - start
    figures, groups = time_backend(backend, job["prompts"], SamplingParams(**job["params"]), job["per_call"])
    Path(job_path).write_text(json.dumps(dict(figures, engine_start_s=started,
                                              groups=[[asdict(s) for s in g] for g in groups])))


def swap_seconds(model_dir: Path, compute_type: str, threads: int) -> float:
    """One LoRA version (the learner's default shape) merged and converted by the ctranslate2 backend."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from learner.config import LearnerConfig
    from producers.generator.backends.ct2 import CTranslate2Backend

    lc = LearnerConfig()
    with tempfile.TemporaryDirectory() as tmp:
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        peft = get_peft_model(base, LoraConfig(r=lc.lora_r, lora_alpha=lc.lora_alpha,
                                               target_modules=list(lc.lora_target_modules)))
        peft.save_pretrained(tmp)
        engine = CTranslate2Backend(model_dir, compute_type=compute_type, threads=threads)
        engine.load_policy(1, tmp)
        return round(engine.last_swap_s, 2)


def generator_alone(args) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from producers.generator.backends.ct2 import CTranslate2Backend
    from producers.generator.backends.hf import TransformersBackend

    model_dir = cached_smollm2()
    if args.threads:
        torch.set_num_threads(args.threads)
    params = SamplingParams(n=args.k, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    code = corpus_functions(args.prompts, args.seed)
    learner_view = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    results = {}
    backends = {"transformers": lambda: TransformersBackend(model_dir, device="cpu")}
    for ct in args.compute_types:
        backends[f"ctranslate2-{ct}"] = lambda ct=ct: CTranslate2Backend(model_dir, compute_type=ct,
                                                                         threads=args.threads)
    for name, make in backends.items():
        backend = make()
        prompts = [render_prompt(backend.tokenizer, c) for c in code]
        figures, groups = time_backend(backend, prompts, params, args.groups_per_call)
        figures["mean_abs_dlogp"] = round(mean_abs_gap(learner_view, prompts, groups, 1.0), 4)
        results[name] = figures
        print(f"  {name:24s} {json.dumps(figures)}", flush=True)
        del backend
    prompts = [render_prompt(AutoTokenizer.from_pretrained(model_dir), c) for c in code]
    vllm = vllm_alone(args, model_dir, prompts, params)
    if vllm is not None:
        figures, groups = vllm
        figures["mean_abs_dlogp"] = round(mean_abs_gap(learner_view, prompts, groups, 1.0), 4)
        results["vllm-bf16"] = figures
        print(f"  {'vllm-bf16':24s} {json.dumps(figures)}", flush=True)
    bare = time_llama_cpp(code, params, args.threads)
    if bare is not None:
        results["llama.cpp-Q4_1 (bare)"] = bare
        print(f"  {'llama.cpp-Q4_1 (bare)':24s} {json.dumps(bare)}", flush=True)
    return results


def learner_mismatch(report_dir: Path) -> dict:
    rows = list(csv.DictReader(open(report_dir / "learner_metrics.csv")))
    keys = ["loss/mismatch_abs_logp", "loss/mismatch_kl", "loss/is_weight_mean", "loss/is_truncated_share"]
    out = {}
    for key in keys:
        values = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
        out[key.split("/")[1]] = round(sum(values) / len(values), 4) if values else None
    return out


def whole_loop(args, backend: str, compute_type: str) -> dict:
    from infra.compose.orchestrator import Orchestrator
    from infra.compose.run_config import RunConfig

    with tempfile.TemporaryDirectory() as runs:
        cfg = RunConfig(name=f"bench-{backend}", runs_dir=Path(runs), steps=args.steps, seed=args.seed,
                        generator={"backend": backend, "compute_type": compute_type}, max_new_tokens=args.max_new_tokens,
                        group_size=args.k, generator_threads=args.threads)
        orchestrator = Orchestrator(cfg)
        summary = orchestrator.run(progress=False)
        figures = dict(summary["throughput"], seconds=summary["seconds"], rollouts=summary["rows"]["rollouts"],
                       restarts=sum(summary["restarts"].values()))
        figures.update(learner_mismatch(orchestrator.cfg.run_dir / "report"))
    print(f"  loop {backend:12s} {json.dumps(figures)}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8, help="corpus prompts per backend")
    parser.add_argument("--k", type=int, default=4, help="samples per prompt (the run's group size)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="the run's completion cap")
    parser.add_argument("--groups-per-call", type=int, default=2, help="prompts per backend call, as the run")
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0: library default)")
    parser.add_argument("--compute-types", nargs="+", default=["float32", "int8"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loop", action="store_true", help="also run the whole loop once per backend")
    parser.add_argument("--loop-compute-type", default="float32", help="precision of the ctranslate2 loop run")
    parser.add_argument("--steps", type=int, default=4, help="learner steps of each loop run")
    parser.add_argument("--vllm-alone", metavar="JOB", help=argparse.SUPPRESS)  # the vLLM side of step 1
    args = parser.parse_args()
    if args.vllm_alone:
        vllm_alone_here(args.vllm_alone)
        return

    print("generator alone (same prompts, K samples each):", flush=True)
    alone = generator_alone(args)
    base = alone["transformers"]
    print("\nratios against transformers (the baseline of this run):")
    for name, figures in alone.items():
        print(f"  {name:24s} tokens/s x{figures['tokens_per_s'] / base['tokens_per_s']:.2f}   "
              f"rollouts/min x{figures['rollouts_per_min'] / base['rollouts_per_min']:.2f}   "
              f"mean |dlogp| {figures.get('mean_abs_dlogp', 'n/a')}")
    for ct in args.compute_types:
        print(f"  swap (LoRA merge + convert, {ct}): {swap_seconds(cached_smollm2(), ct, args.threads)} s")
    if not args.loop:
        return
    print("\nwhole loop (generator + worker + learner + sink):", flush=True)
    hf = whole_loop(args, "transformers", "float32")
    ct2 = whole_loop(args, "ctranslate2", args.loop_compute_type)
    alone_ct2 = alone[f"ctranslate2-{args.loop_compute_type}"]
    print(f"\n  loop rollouts/min ctranslate2 / transformers: x{ct2['rollouts_per_min'] / hf['rollouts_per_min']:.2f}")
    print(f"  loop / generator alone (ctranslate2): x{ct2['rollouts_per_min'] / alone_ct2['rollouts_per_min']:.2f}")
    print(f"  loop / generator alone (transformers): x{hf['rollouts_per_min'] / base['rollouts_per_min']:.2f}")
    print(f"  first rollout: ctranslate2 {ct2['first_rollout_s']} s, transformers {hf['first_rollout_s']} s")
    if "vllm-bf16" in alone:
        vllm = whole_loop(args, "vllm", "float32")
        print(f"  loop rollouts/min vllm / transformers: x{vllm['rollouts_per_min'] / hf['rollouts_per_min']:.2f}, "
              f"vllm / ctranslate2: x{vllm['rollouts_per_min'] / ct2['rollouts_per_min']:.2f}; "
              f"first rollout vllm {vllm['first_rollout_s']} s")


if __name__ == "__main__":
    main()
