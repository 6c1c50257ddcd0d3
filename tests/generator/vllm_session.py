"""One vLLM engine session for the vLLM tests, run by the interpreter of the environment that
has vLLM (on a CPU: infra/vllm_cpu/setup.sh's), since the test process may not import it.

    <vllm python> tests/generator/vllm_session.py PLAN.json OUT.json

The plan names the model, the tokenised prompts, a LoRA adapter and the backend's
`policy_swap`; the session starts the project's VLLMBackend once (its start is the slow
part), samples with the base weights (with "lora" also again with the same seed, greedily,
and on a prompt answered in a few tokens, to see a stop), then swaps to the adapter and
samples again, and writes every sample and timing to OUT.json for the tests to check
against transformers.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict


def main(plan_path: str, out_path: str) -> None:
    from producers.generator.backends import SamplingParams
    from producers.generator.backends.vllm_backend import VLLMBackend

    plan = json.loads(open(plan_path).read())
    prompts = plan["prompts"]
    started = time.perf_counter()
    backend = VLLMBackend(plan["model_dir"], kv_cache_gib=1, max_model_len=1024, max_lora_rank=8,
                          policy_swap=plan["policy_swap"])
    out: dict = {"engine_start_s": time.perf_counter() - started, "stop_token_ids": backend.stop_token_ids}

    def sample(name: str, params: SamplingParams) -> None:
        t0 = time.perf_counter()
        groups = backend.generate(prompts, params)
        out[name] = [[asdict(s) for s in group] for group in groups]
        out[f"{name}_s"] = time.perf_counter() - t0

    sampled = SamplingParams(**plan["sampled"])
    sample("base", sampled)  # also fills the prefix cache with the base weights' keys and values
    if plan["policy_swap"] == "lora":
        sample("base_again", sampled)
        sample("greedy", SamplingParams(**plan["greedy"]))
        prompts = [plan["short_prompt"]]  # one the model answers in a few tokens: it stops
        sample("short", SamplingParams(**plan["greedy"]))
        prompts = plan["prompts"]
    t0 = time.perf_counter()
    backend.load_policy(1, plan["adapter"])
    sample("adapted", SamplingParams(**plan["adapted"]))
    out["swap_and_adapted_s"] = time.perf_counter() - t0
    out["policy_version"] = backend.policy_version
    out["last_swap_s"] = backend.last_swap_s
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":  # vLLM's engine may start processes that import this module
    main(sys.argv[1], sys.argv[2])
