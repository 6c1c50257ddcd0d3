"""Supervised warm-up on (buggy -> fixed) MBPP pairs with the tiny model."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from producers.generator.backends import SamplingParams
from producers.generator.backends.hf import TransformersBackend
from producers.generator.model_store import build_tiny_model
from schemas.prompt import render_prompt
from producers.generator.warmup import (
    IGNORE_INDEX,
    RepairPair,
    WarmupConfig,
    encode_pair,
    pairs_from_tasks,
    split_pairs,
    warmup,
)


def test_mbpp_pairs_have_a_bug_and_no_crlf(make_mbpp_tasks):
    tasks = make_mbpp_tasks(5)
    assert len(tasks) == 5
    for task in tasks:
        assert task["buggy_code"] != task["reference_code"]
        assert "\r" not in task["reference_code"]


def test_pairs_from_tasks_keeps_the_requested_splits():
    tasks = [
        {"buggy_code": "a", "reference_code": "b", "split": "train"},
        {"buggy_code": "c", "reference_code": "d", "split": "test"},
        {"buggy_code": "e", "reference_code": "f", "split": "validation", "error_context": "E"},
    ]
    assert pairs_from_tasks(tasks) == [RepairPair("a", "b")]
    assert pairs_from_tasks(tasks, splits=("validation",)) == [RepairPair("e", "f", "E")]


def test_encoded_pair_masks_the_prompt_and_ends_with_eos(tokenizer):
    pair = RepairPair("def f():\n    return 0\n", "def f():\n    return 1\n")
    input_ids, labels = encode_pair(tokenizer, pair)
    prompt = render_prompt(tokenizer, pair.buggy_code)
    assert input_ids[: len(prompt)] == prompt
    assert labels[: len(prompt)] == [IGNORE_INDEX] * len(prompt)
    target = labels[len(prompt) :]
    assert target == input_ids[len(prompt) :]
    assert target[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(target[:-1]) == "```python\ndef f():\n    return 1\n```"


def test_encoded_pair_with_the_error_context_prompts_as_the_generator(tokenizer):
    from schemas.prompt import render_task_prompt

    task = {"buggy_code": "def f():\n    return 0\n", "reference_code": "def f():\n    return 1\n",
            "split": "train", "visible_tests": ["assert f() == 1"], "error_context": "expected 1, got 0"}
    (pair,) = pairs_from_tasks([task])
    assert pair.visible_tests == ("assert f() == 1",) and pair.error_context == "expected 1, got 0"
    for include in (False, True):
        prompt = render_task_prompt(tokenizer, task, include)
        assert encode_pair(tokenizer, pair, include)[0][: len(prompt)] == prompt
    assert "assert f() == 1" in tokenizer.decode(encode_pair(tokenizer, pair, True)[0])
    assert "assert f() == 1" not in tokenizer.decode(encode_pair(tokenizer, pair, False)[0])


def test_split_is_seeded_and_disjoint():
    pairs = [RepairPair(str(i), str(i)) for i in range(10)]
    train, val = split_pairs(pairs, 0.2, seed=1)
    assert len(train) == 8 and len(val) == 2
    assert set(train).isdisjoint(val) and set(train) | set(val) == set(pairs)
    assert split_pairs(pairs, 0.2, seed=1) == (train, val)


@pytest.fixture(scope="module")
def tiny_standard_dir(smollm2_dir, tmp_path_factory):
    """Tiny model with the usual small init: near-uniform start, loss about ln(49152) = 10.8."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny_standard"), smollm2_dir)


@pytest.fixture(scope="module")
def short_pairs(make_mbpp_tasks):
    """The MBPP pairs with the shortest reference code first (keeps the tests quick)."""
    return sorted(pairs_from_tasks(make_mbpp_tasks(60)), key=lambda p: len(p.reference_code))


def test_tiny_warmup_lowers_validation_loss_and_saves_a_loadable_model(tiny_standard_dir, short_pairs, tmp_path):
    pairs = short_pairs[:16]
    cfg = WarmupConfig(epochs=3, learning_rate=3e-3, batch_size=4, max_length=512, device="cpu")
    metrics = warmup(tiny_standard_dir, pairs[:12], tmp_path / "warm", cfg, validation_pairs=pairs[12:])
    assert (metrics.train_pairs, metrics.val_pairs, metrics.skipped_pairs) == (12, 4, 0)
    assert metrics.steps == 3 * 3
    assert metrics.val_loss_before == pytest.approx(10.8, abs=0.3)
    assert metrics.val_loss_after < metrics.val_loss_before - 1.0
    saved = json.loads((tmp_path / "warm" / "warmup_metrics.json").read_text())
    assert saved["val_loss_after"] == pytest.approx(metrics.val_loss_after)
    # The saved folder is a normal base model for the generator.
    backend = TransformersBackend(tmp_path / "warm", device="cpu")
    groups = backend.generate(
        [render_prompt(backend.tokenizer, pairs[0].buggy_code)], SamplingParams(n=1, max_new_tokens=4)
    )
    assert len(groups[0][0].token_ids) >= 1


def test_lora_warmup_is_merged_into_plain_weights(tiny_dir, short_pairs, tmp_path):
    pairs = short_pairs[:6]
    cfg = WarmupConfig(epochs=1, learning_rate=1e-2, batch_size=2, lora_rank=4, max_length=512, device="cpu")
    metrics = warmup(tiny_dir, pairs, tmp_path / "merged", cfg)
    assert (metrics.train_pairs, metrics.val_pairs) == (5, 1)
    out = tmp_path / "merged"
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(out)
    base = AutoModelForCausalLM.from_pretrained(tiny_dir)
    assert not any("lora" in name for name in merged.state_dict())
    changed = [
        name for name, weight in merged.state_dict().items() if not torch.allclose(weight, base.state_dict()[name])
    ]
    assert changed and all("proj" in name for name in changed)


def test_no_training_pairs_is_an_error(tiny_dir, tmp_path):
    with pytest.raises(ValueError):
        warmup(tiny_dir, [], tmp_path / "none", WarmupConfig(device="cpu"), validation_pairs=[])
