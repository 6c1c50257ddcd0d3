"""vLLM's CPU engine under each thread setting: OpenMP threads left to the OS scheduler
(`nobind`, the default), bound to cores 0-1 (`threads: 2`), and bound with torch's libgomp
preloaded into the generator process.

vLLM's CPU platform writes LD_PRELOAD (torch's libgomp, "otherwise only one core will be
properly utilized when we thread-bind") into os.environ for the worker processes it starts;
this project runs the engine in the generator's own process, where that comes too late, so
the third setting starts the process with it. Same prompts and samples as
benchmarks/loop_throughput.py's generator-alone step, each setting in a fresh process, the
settings taken in turn (A B C A B C ...); medians, and ratios against `nobind`.

    python benchmarks/vllm_threads.py --prompts 8 --rounds 2
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from benchmarks.loop_throughput import corpus_functions, vllm_alone
from producers.generator.backends import SamplingParams
from producers.generator.model_store import cached_smollm2
from schemas.prompt import render_prompt


def torch_libgomp() -> str:
    """The libgomp that torch ships (where vLLM looks for it: torch/lib, then torch.libs)."""
    import torch

    root = Path(torch.__file__).parent
    found = glob.glob(str(root / "lib" / "libgomp*.so*")) + glob.glob(str(root.parent / "torch.libs" / "libgomp*.so*"))
    if not found:
        raise SystemExit("torch ships no libgomp here: nothing to preload")
    return found[0]


@dataclass(frozen=True)
class EngineSetting:
    """One way to start vLLM's CPU engine: its threads (0 leaves them unbound), its KV cache
    and extra environment for the process."""

    threads: int = 0
    kv_cache_gib: int = 1
    env: dict[str, str] = field(default_factory=dict)


def measure_in_turn(settings: dict[str, EngineSetting], model_dir: Path, prompts: list[list[int]],
                    params: SamplingParams, groups_per_call: int, rounds: int) -> dict[str, float]:
    """Each setting in a fresh process, the settings taken in turn (A B A B ...); prints every
    measurement, then medians and ratios against the first setting, the baseline. Returns the
    median tokens/s of each."""
    runs: dict[str, list[dict]] = {name: [] for name in settings}
    for round_ in range(rounds):
        for name, setting in settings.items():
            job = argparse.Namespace(groups_per_call=groups_per_call, threads=setting.threads,
                                     kv_cache_gib=setting.kv_cache_gib)
            measured = vllm_alone(job, model_dir, prompts, params, env=setting.env)
            if measured is None:
                raise SystemExit("vLLM is not installed here (bash infra/vllm_cpu/setup.sh)")
            figures, _ = measured
            runs[name].append(figures)
            print(f"  round {round_ + 1} {name:22s} {json.dumps(figures)}", flush=True)
    baseline = next(iter(settings))
    medians = {name: statistics.median(f["tokens_per_s"] for f in figures) for name, figures in runs.items()}
    print(f"\nmedians, ratios against {baseline} (the baseline of this run):")
    for name, figures in runs.items():
        start_s = statistics.median(f["engine_start_s"] for f in figures)
        print(f"  {name:22s} {medians[name]:7.1f} tokens/s  x{medians[name] / medians[baseline]:.2f}"
              f"   engine start {start_s:.1f} s", flush=True)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8, help="corpus prompts per setting")
    parser.add_argument("--k", type=int, default=4, help="samples per prompt (the run's group size)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="the run's completion cap")
    parser.add_argument("--groups-per-call", type=int, default=2, help="prompts per engine call, as the run")
    parser.add_argument("--cores", type=int, default=2, help="cores the bound settings take (0..cores-1)")
    parser.add_argument("--rounds", type=int, default=2, help="times each setting is measured")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    model_dir = cached_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = [render_prompt(tokenizer, c) for c in corpus_functions(args.prompts, args.seed)]
    params = SamplingParams(n=args.k, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    bound = f"bind 0-{args.cores - 1}"
    settings = {"nobind": EngineSetting(),
                bound: EngineSetting(threads=args.cores),
                f"{bound} + libgomp": EngineSetting(threads=args.cores, env={"LD_PRELOAD": torch_libgomp()})}
    measure_in_turn(settings, model_dir, prompts, params, args.groups_per_call, args.rounds)


if __name__ == "__main__":
    main()
