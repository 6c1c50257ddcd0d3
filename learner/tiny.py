"""A tiny Llama causal LM saved to a local directory, for tests and benchmarks.

The learner only sees token ids, so no tokenizer is written.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama_config(
    vocab_size: int = 256,
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=4 * hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )


def build_tiny_llama(
    directory: str | Path, seed: int = 0, config: LlamaConfig | None = None
) -> Path:
    """Write a randomly initialised (seeded) Llama to ``directory`` and return it."""
    directory = Path(directory)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config or tiny_llama_config())
    model.save_pretrained(directory)
    return directory
