"""The offline base policy: pinned GGUF, conversion to a Hugging Face folder, tiny Llama."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from producers.generator.model_store import (
    MANIFEST,
    SMOLLM2_SHA256,
    ModelStoreError,
    init_model,
    load_gguf_model,
    sha256_file,
    smollm2_gguf_path,
)
from schemas.prompt import render_prompt


def test_shipped_gguf_matches_the_pinned_hash():
    assert sha256_file(smollm2_gguf_path()) == SMOLLM2_SHA256


def test_converted_folder_has_manifest_and_turn_ending_eos(smollm2_dir):
    manifest = json.loads((smollm2_dir / MANIFEST).read_text())
    assert manifest["source"] == "smollm2" and manifest["sha256"] == SMOLLM2_SHA256
    assert manifest["created"].endswith("Z")
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == 2
    assert len(tokenizer) == 49152


def test_unknown_source_is_refused(tmp_path):
    with pytest.raises(ModelStoreError):
        init_model(tmp_path / "m", source=str(tmp_path / "missing"))


def test_tiny_model_shares_the_tokenizer_and_ties_embeddings(tiny_dir, smollm2_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    assert model.config.vocab_size == 49152 and model.config.num_hidden_layers == 2
    assert model.config.hidden_size == 64
    assert model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    prompt = "def f():\n    return 1"
    assert (
        AutoTokenizer.from_pretrained(tiny_dir)(prompt)["input_ids"]
        == AutoTokenizer.from_pretrained(smollm2_dir)(prompt)["input_ids"]
    )


def test_init_from_a_local_folder_copies_the_weights(tiny_dir, tmp_path):
    copy = init_model(tmp_path / "copy", source=str(tiny_dir))
    assert json.loads((copy / MANIFEST).read_text())["source"] == str(tiny_dir)
    a = AutoModelForCausalLM.from_pretrained(tiny_dir).state_dict()
    b = AutoModelForCausalLM.from_pretrained(copy).state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # A finished folder is returned as is, not rebuilt.
    stamp = (copy / MANIFEST).read_text()
    assert init_model(copy, source="ignored") == copy and (copy / MANIFEST).read_text() == stamp


def greedy(model, ids: list[int], steps: int) -> list[int]:
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=steps, pad_token_id=2)
    return out[0, len(ids) :].tolist()


@pytest.mark.slow
def test_converted_folder_decodes_like_the_gguf(smollm2_dir):
    gguf_model, gguf_tokenizer = load_gguf_model(smollm2_gguf_path())
    converted = AutoModelForCausalLM.from_pretrained(smollm2_dir)
    ids = render_prompt(gguf_tokenizer, "def add(a, b):\n    return a - b\n")
    assert ids == render_prompt(AutoTokenizer.from_pretrained(smollm2_dir), "def add(a, b):\n    return a - b\n")
    expected = greedy(gguf_model.eval(), ids, 24)
    assert greedy(converted.eval(), ids, 24) == expected
    assert len(set(expected)) > 3  # a real completion, not one repeated token
