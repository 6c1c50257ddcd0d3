"""Checkpoints: bit-exact resume, atomic layout, offsets, published weights."""

import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from learner.batching import collate
from learner.checkpoint import CheckpointError, load_latest, restore, weights_sha256
from learner.config import LearnerConfig
from learner.model import token_logprobs
from learner.trainer import Learner


def step_records(step, policy_version=0):
    """Deterministic, step-dependent records: two groups of two, stale behaviour log-probs."""
    records = []
    for g in range(2):
        for i in range(2):
            completion = [
                (step * 7 + g * 3 + i * 5 + k) % 200 + 3 for k in range(2 + i + g)
            ]
            records.append({
                "group_id": f"s{step}g{g}", "sample_index": i, "group_members": 2,
                "prompt_token_ids": [4, 5 + g, 6 + step % 3], "completion_token_ids": completion,
                "behaviour_logprobs": [-5.6 + 0.05 * k for k in range(len(completion))],
                "advantage": 1.0 if i == 0 else -1.0, "policy_version": policy_version, "finish_reason": "stop",
            })  # fmt: skip
    return records


def trainable_state(learner):
    return {
        n: p.detach().clone()
        for n, p in learner.model.named_parameters()
        if p.requires_grad
    }


@pytest.mark.parametrize("use_lora", [True, False])
def test_resume_is_bit_exact(tiny_model_dir, tmp_path, use_lora):
    cfg = LearnerConfig(
        use_lora=use_lora, learning_rate=1e-2, warmup_steps=2, max_steps=8, num_iterations=2,
        beta=0.05, entropy_coef=0.001, checkpoint_dir=tmp_path / "ckpt",
    )  # fmt: skip
    total, split = 4, 2

    straight = Learner(cfg, tiny_model_dir, device="cpu")
    straight_losses = [straight.step(step_records(s)).loss.loss for s in range(total)]

    first = Learner(cfg, tiny_model_dir, device="cpu")
    losses = [first.step(step_records(s)).loss.loss for s in range(split)]
    first.save_checkpoint(offsets={"advantages.default": {0: 17, 3: 4}})
    del first

    second = Learner(cfg, tiny_model_dir, device="cpu")
    ckpt = second.resume()
    assert ckpt.step == split * cfg.num_iterations
    assert ckpt.offsets == {"advantages.default": {0: 17, 3: 4}}
    losses += [second.step(step_records(s)).loss.loss for s in range(split, total)]

    assert losses == straight_losses  # exact float equality
    a, b = trainable_state(straight), trainable_state(second)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert second.scheduler.get_last_lr() == straight.scheduler.get_last_lr()
    assert second.step_count == straight.step_count == total * cfg.num_iterations


def test_adaptive_kl_coefficient_survives_a_restart(tiny_model_dir, tmp_path):
    cfg = LearnerConfig(
        learning_rate=3e-2, beta=0.05, adap_kl_ctrl=True, target=0.01, horizon=10,
        checkpoint_dir=tmp_path / "ckpt",
    )  # fmt: skip
    straight = Learner(cfg, tiny_model_dir, device="cpu")
    expected = [straight.step(step_records(s)) for s in range(4)]

    first = Learner(cfg, tiny_model_dir, device="cpu")
    got = [first.step(step_records(s)) for s in range(2)]
    adapted = first.kl_coef.beta(first.step_count)
    assert adapted != cfg.beta  # the controller has moved it: the test below can tell
    path = first.save_checkpoint()
    assert load_latest(path.parent).kl_controller == {"value": adapted, "target": 0.01, "horizon": 10}
    del first

    second = Learner(cfg, tiny_model_dir, device="cpu")
    assert second.kl_coef.beta(0) == cfg.beta
    second.resume()
    assert second.kl_coef.beta(second.step_count) == adapted
    got += [second.step(step_records(s)) for s in range(2, 4)]
    assert [m.kl_coef for m in got] == [m.kl_coef for m in expected]
    assert [m.loss.loss for m in got] == [m.loss.loss for m in expected]  # exact float equality


def test_checkpoint_layout_and_latest(tiny_model_dir, tmp_path):
    learner = Learner(
        LearnerConfig(checkpoint_dir=tmp_path), tiny_model_dir, device="cpu"
    )
    assert load_latest(tmp_path) is None and load_latest(tmp_path / "absent") is None
    learner.save_checkpoint(offsets={"t": {0: 1}})
    learner.step(step_records(0))
    path = learner.save_checkpoint(offsets={"t": {0: 5, 1: 2}})
    pending = [step_records(9)[0]]
    learner.save_checkpoint(
        extra={"pending_records": pending}
    )  # same step: replaces, keeps the offsets
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "step-00000000",
        "step-00000001",
    ]  # no temporary or trash directories left
    latest = load_latest(tmp_path)
    assert (
        latest.path == path
        and latest.step == 1
        and latest.offsets == {"t": {0: 5, 1: 2}}
    )
    assert {
        "adapter.safetensors",
        "optimizer.pt",
        "scheduler.pt",
        "rng.pt",
        "state.json",
    } <= {p.name for p in path.iterdir()}


def test_restore_into_the_wrong_kind_of_model_fails(tiny_model_dir, tmp_path):
    lora = Learner(LearnerConfig(checkpoint_dir=tmp_path), tiny_model_dir, device="cpu")
    lora.save_checkpoint()
    full = Learner(LearnerConfig(use_lora=False), tiny_model_dir, device="cpu")
    with pytest.raises(CheckpointError, match="no full model"):
        restore(load_latest(tmp_path), full.model, full.optimizer, full.scheduler)


def test_resume_restores_rng_states(tiny_model_dir, tmp_path):
    learner = Learner(
        LearnerConfig(checkpoint_dir=tmp_path), tiny_model_dir, device="cpu"
    )
    learner.save_checkpoint()
    expected = torch.rand(3)
    torch.manual_seed(1234)
    learner.resume()
    assert torch.equal(torch.rand(3), expected)


def test_published_adapter_reproduces_the_policy(tiny_model_dir, tmp_path):
    learner = Learner(
        LearnerConfig(learning_rate=1e-2, publish_every=2), tiny_model_dir, device="cpu"
    )
    learner.step(step_records(0))
    assert not learner.due_for_publish()
    learner.step(step_records(1))
    assert learner.due_for_publish()
    event = learner.publish(tmp_path)
    assert (
        event["version"] == 1
        and event["learner_step"] == 2
        and not learner.due_for_publish()
    )
    assert event["sha256"] == weights_sha256(event["location"])
    assert event["location"].endswith("v-00000001")

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    loaded = PeftModel.from_pretrained(base, event["location"]).eval()
    mb = collate(step_records(5))
    with torch.no_grad():
        args = (mb.input_ids, mb.attention_mask, mb.completion_start, 1.0)
        assert torch.allclose(
            token_logprobs(loaded, *args),
            token_logprobs(learner.model, *args),
            atol=1e-6,
        )
        # and it is not simply the base model
        with learner.model.disable_adapter():
            assert not torch.allclose(
                token_logprobs(learner.model, *args),
                token_logprobs(loaded, *args),
                atol=1e-4,
            )
