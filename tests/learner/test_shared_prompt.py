"""The shared-prompt forward (each distinct prompt run once, completions on its cache) gives
the log-probs, entropies and gradients of the plain forward over whole rows."""

import pytest
import torch

from learner.batching import collate
from learner.config import LearnerConfig
from learner.model import load_policy, token_logprobs
from learner.trainer import Learner

# two groups with prompts of different lengths, a lone row, and rows given out of group order
ROWS = [
    ("a", [5, 6, 7, 8, 9], [10, 11, 12, 13]),
    ("b", [3, 4], [20, 21]),
    ("a", [5, 6, 7, 8, 9], [14]),
    ("c", [30, 31, 32, 33, 34, 35, 36], [40, 41, 42, 43, 44, 45]),
    ("b", [3, 4], [22, 23, 24, 25, 26]),
    ("a", [5, 6, 7, 8, 9], [15, 16, 17, 18, 19, 20, 21]),
]


def batch(make_record):
    return collate([make_record(g, i, p, c, 1.0 if i % 2 else -1.0) for i, (g, p, c) in enumerate(ROWS)])


def scored(model, mb, share: bool, temperature: float = 0.7):
    return token_logprobs(model, mb.input_ids, mb.attention_mask, mb.completion_start, temperature,
                          completion_length=mb.completion_mask.shape[1], with_entropy=True, entropy_grad=True,
                          share_prompts=share)  # fmt: skip


@pytest.mark.parametrize("use_lora", [True, False])
def test_shared_prompts_give_the_log_probs_entropies_and_gradients_of_whole_rows(tiny_model_dir, make_record,
                                                                                 use_lora):
    model = load_policy(tiny_model_dir, LearnerConfig(use_lora=use_lora))
    mb = batch(make_record)
    results = {}
    for share in (False, True):
        model.zero_grad(set_to_none=True)
        logp, entropy = scored(model, mb, share)
        mask = mb.completion_mask
        assert torch.isfinite(logp).all() and torch.isfinite(entropy).all()  # padding columns too
        ((logp * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results[share] = (logp.detach()[mask], entropy.detach()[mask], grads)
    (lp0, en0, g0), (lp1, en1, g1) = results[False], results[True]
    assert lp1.shape == lp0.shape == (sum(len(c) for _, _, c in ROWS),)
    torch.testing.assert_close(lp1, lp0, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(en1, en0, atol=1e-5, rtol=1e-5)
    assert g0.abs().sum() > 0
    torch.testing.assert_close(g1, g0, atol=1e-5, rtol=1e-4)


def test_a_learner_step_is_the_same_with_and_without_shared_prompts(tiny_model_dir, make_record, tmp_path):
    records = [make_record(g, i, p, c, 1.0 if i % 2 else -1.0, group_members=3 if g == "a" else 2)
               for i, (g, p, c) in enumerate(ROWS) if g != "c"]
    steps = {}
    for share in (False, True):
        cfg = LearnerConfig(share_prompt_forward=share, groups_per_step=2, learning_rate=1e-3, precision="float32",
                            checkpoint_dir=tmp_path / f"c{share}", publish_dir=tmp_path / f"p{share}")
        learner = Learner(cfg, tiny_model_dir, device="cpu")
        metrics = learner.step(records)
        steps[share] = (metrics.loss.loss, metrics.grad_norm, metrics.num_tokens,
                        torch.cat([p.detach().flatten() for p in learner.model.parameters() if p.requires_grad]))
    assert steps[True][2] == steps[False][2] > 0
    assert steps[True][0] == pytest.approx(steps[False][0], abs=1e-5)
    assert steps[True][1] == pytest.approx(steps[False][1], rel=1e-4)
    torch.testing.assert_close(steps[True][3], steps[False][3], atol=1e-6, rtol=1e-5)
