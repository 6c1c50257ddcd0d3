"""Throughput of the transformers backend against a bare `model.generate` on the same prompts.

The backend adds what a rollout needs on top of generate(): the raw logits of every step,
the behaviour logprobs computed from them, stop-token trimming and decoding. The ratio
(backend tokens/s over bare tokens/s) is that overhead.

    python benchmarks/generate.py --prompts 4 --k 4 --max-new-tokens 64
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from producers.corpus.mbpp import mbpp_path
from producers.generator.backends import SamplingParams
from producers.generator.backends.hf import TransformersBackend, left_pad
from producers.generator.model_store import cached_smollm2
from schemas.prompt import render_prompt

MBPP = mbpp_path()  # $RESHAPER_DATA_DIR or the shared data folder beside the checkout


def buggy_functions(n: int) -> list[str]:
    """n MBPP functions with their first `+` turned into `-` (a stand-in for the corpus)."""
    out = []
    for line in MBPP.read_text().splitlines():
        code = json.loads(line)["code"].replace("\r\n", "\n")
        if " + " in code:
            out.append(code.replace(" + ", " - ", 1))
        if len(out) == n:
            break
    return out


def count_generated(rows: torch.Tensor, stop_ids: list[int]) -> int:
    """Tokens generated per row up to and including the first stop token."""
    total = 0
    for row in rows.tolist():
        stops = [i for i, t in enumerate(row) if t in stop_ids]
        total += stops[0] + 1 if stops else len(row)
    return total


def bare_generate(backend: TransformersBackend, prompts: list[list[int]], params: SamplingParams) -> tuple[int, float]:
    ids, mask = left_pad(prompts, backend.pad_token_id, backend.device)
    torch.manual_seed(params.seed)
    start = time.perf_counter()
    with torch.inference_mode():
        out = backend.model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k,
            num_return_sequences=params.n,
            max_new_tokens=params.max_new_tokens,
            eos_token_id=backend.stop_token_ids,
            pad_token_id=backend.pad_token_id,
        )
    seconds = time.perf_counter() - start
    return count_generated(out[:, ids.shape[1] :], backend.stop_token_ids), seconds


def backend_generate(
    backend: TransformersBackend, prompts: list[list[int]], params: SamplingParams
) -> tuple[int, float]:
    start = time.perf_counter()
    groups = backend.generate(prompts, params)
    seconds = time.perf_counter() - start
    return sum(len(s.token_ids) for g in groups for s in g), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: converted SmolLM2)")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--k", type=int, default=4, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds of each (best is reported)")
    args = parser.parse_args()

    backend = TransformersBackend(
        args.model or cached_smollm2(), device=args.device, max_batch_sequences=args.prompts * args.k
    )
    prompts = [render_prompt(backend.tokenizer, code) for code in buggy_functions(args.prompts)]
    params = SamplingParams(
        n=args.k, temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens, seed=0
    )
    backend.generate(prompts[:1], params.model_copy(update={"n": 1, "max_new_tokens": 4}))  # warm caches, untimed

    # Interleaved rounds, best of each, so background load hits both sides alike.
    best = {"backend": 0.0, "bare": 0.0}
    tokens = {}
    for _ in range(args.repeats):
        for name, run in (("bare", bare_generate), ("backend", backend_generate)):
            n_tokens, seconds = run(backend, prompts, params)
            tokens[name] = n_tokens
            best[name] = max(best[name], n_tokens / seconds)
    report = {
        "model": str(args.model or "smollm2-135m-instruct"),
        "device": str(backend.device),
        "prompts": args.prompts,
        "k": args.k,
        "max_new_tokens": args.max_new_tokens,
        "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
        "generated_tokens": tokens,
        "backend_tokens_per_s": round(best["backend"], 1),
        "bare_generate_tokens_per_s": round(best["bare"], 1),
        "ratio": round(best["backend"] / best["bare"], 3),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
