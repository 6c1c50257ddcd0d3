"""vLLM's CPU engine with its KV cache at 1 GiB (the default) and at larger sizes, on the same
prompts and samples: each size in a fresh process, the sizes taken in turn (A B A B ...);
medians, and ratios against the first size.

The KV cache bounds the tokens the engine holds at once (SmolLM2-135M in bf16 keeps 23 kB a
token: 1 GiB is 46k tokens); a call needs at most prompts x K x (prompt + completion cap)
of them, printed first, so a run shows whether a size binds at all.

    python benchmarks/vllm_kv_cache.py --sizes 1 4 --rounds 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from benchmarks.loop_throughput import corpus_functions
from benchmarks.vllm_threads import EngineSetting, measure_in_turn
from producers.generator.backends import SamplingParams
from producers.generator.model_store import cached_smollm2
from schemas.prompt import render_prompt

KV_BYTES_PER_TOKEN = 30 * 3 * 64 * 2 * 2  # SmolLM2-135M: layers x KV heads x head dim x (K, V) x bf16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4], help="KV cache sizes in GiB, baseline first")
    parser.add_argument("--prompts", type=int, default=8, help="corpus prompts per size")
    parser.add_argument("--k", type=int, default=4, help="samples per prompt (the run's group size)")
    parser.add_argument("--max-new-tokens", type=int, default=160, help="completion cap")
    parser.add_argument("--groups-per-call", type=int, default=2, help="prompts per engine call")
    parser.add_argument("--rounds", type=int, default=2, help="times each size is measured")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if len(args.sizes) < 2 or min(args.sizes) < 1:
        parser.error("--sizes takes two or more sizes of at least 1 GiB")

    from transformers import AutoTokenizer

    model_dir = cached_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = [render_prompt(tokenizer, c) for c in corpus_functions(args.prompts, args.seed)]
    widest = sorted((len(p) for p in prompts), reverse=True)[:args.groups_per_call]
    demand = sum(length + args.max_new_tokens for length in widest) * args.k
    print(f"one call holds at most {demand:,} tokens ({demand * KV_BYTES_PER_TOKEN / 2**30:.2f} GiB of KV cache); "
          f"{args.groups_per_call} prompts x K {args.k}, completions up to {args.max_new_tokens} tokens", flush=True)
    params = SamplingParams(n=args.k, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    settings = {f"{gib} GiB": EngineSetting(kv_cache_gib=gib) for gib in args.sizes}
    measure_in_turn(settings, model_dir, prompts, params, args.groups_per_call, args.rounds)


if __name__ == "__main__":
    main()
