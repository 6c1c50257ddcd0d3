"""Model scoring and the training loop on a tiny Llama (CPU)."""

import pytest
import torch

from learner.batching import collate
from learner.config import LearnerConfig
from learner.model import ModelLoadError, load_policy, token_logprobs
from learner.trainer import Learner

PROMPT = [5, 6, 7, 8]
GOOD = [10, 11, 12]
BAD = [20, 21, 22]


def test_token_logprobs_match_unbatched_tempered_softmax(tiny_model_dir, make_record):
    model = load_policy(tiny_model_dir, LearnerConfig())
    rows = [([5, 6, 7], [10, 11]), ([9], [20, 21, 22, 23])]
    mb = collate([make_record("g", i, p, c, 0.0) for i, (p, c) in enumerate(rows)])
    with torch.no_grad():
        logp, entropy = token_logprobs(
            model,
            mb.input_ids,
            mb.attention_mask,
            mb.completion_start,
            temperature=0.7,
            with_entropy=True,
        )
        assert logp.shape == (2, 4)
        for i, (prompt, completion) in enumerate(rows):
            ids = torch.tensor([prompt + completion])
            tempered = torch.log_softmax(model(input_ids=ids).logits[0] / 0.7, dim=-1)
            for j, token in enumerate(completion):
                dist = tempered[len(prompt) + j - 1]
                assert logp[i, j].item() == pytest.approx(dist[token].item(), abs=1e-5)
                assert entropy[i, j].item() == pytest.approx(
                    -(dist.exp() * dist).sum().item(), abs=1e-5
                )


def test_missing_model_dir_is_a_typed_error(tmp_path):
    with pytest.raises(ModelLoadError):
        load_policy(tmp_path / "nowhere", LearnerConfig())


def group_records(learner, policy_version=0):
    """One group: the same prompt, a favoured and a disfavoured completion, with the
    behaviour log-probs of the learner's current policy (on-policy sampling)."""
    records = []
    for i, (completion, advantage) in enumerate([(GOOD, 1.0), (BAD, -1.0)]):
        records.append({
            "group_id": "g", "sample_index": i, "group_members": 2, "prompt_token_ids": PROMPT,
            "completion_token_ids": completion, "behaviour_logprobs": [0.0] * 3, "advantage": advantage,
            "policy_version": policy_version, "finish_reason": "stop",
        })  # fmt: skip
    mb = collate(records)
    with torch.no_grad():
        logp = token_logprobs(
            learner.model, mb.input_ids, mb.attention_mask, mb.completion_start, 1.0
        )
    for r, row in zip(records, logp):
        r["behaviour_logprobs"] = row.tolist()
    return records


def sequence_logprob(learner, completion):
    mb = collate([{"group_id": "x", "prompt_token_ids": PROMPT, "completion_token_ids": completion,
                   "behaviour_logprobs": [0.0] * len(completion), "advantage": 0.0, "policy_version": 0,
                   "finish_reason": "stop"}])  # fmt: skip
    with torch.no_grad():
        return (
            token_logprobs(
                learner.model, mb.input_ids, mb.attention_mask, mb.completion_start, 1.0
            )
            .sum()
            .item()
        )


@pytest.mark.parametrize(
    "use_lora, precision", [(True, "float32"), (False, "float32"), (True, "bfloat16")]
)
def test_tiny_model_learns_the_favoured_completion(tiny_model_dir, use_lora, precision):
    cfg = LearnerConfig(
        learning_rate=3e-2 if use_lora else 3e-3, use_lora=use_lora, groups_per_step=1, precision=precision
    )
    learner = Learner(cfg, tiny_model_dir, device="cpu")
    good0, bad0 = sequence_logprob(learner, GOOD), sequence_logprob(learner, BAD)
    # The behaviour log-probs are scored in float32: under bf16 the learner's own differ by
    # bf16 rounding, which the importance weight absorbs.
    is_tolerance = 1e-5 if precision == "float32" else 1e-2
    for _ in range(10):
        metrics = learner.step(group_records(learner))
        assert (
            metrics.loss.clip_low_frac == 0
            and metrics.loss.is_weight_mean == pytest.approx(1.0, abs=is_tolerance)
        )
    assert sequence_logprob(learner, GOOD) > good0 + 1.0
    assert sequence_logprob(learner, BAD) < bad0 - 0.5
    assert metrics.step == 10 and metrics.num_tokens == 6 and metrics.grad_norm > 0


@pytest.mark.parametrize(
    ("beta", "kl_measure_every", "passes"), [(0.0, 0, 0), (0.0, 2, 2), (0.0, 1, 4), (0.1, 0, 4)]
)
def test_reference_pass_runs_on_the_steps_that_measure_or_weigh_kl(
    tiny_model_dir, monkeypatch, beta, kl_measure_every, passes
):
    cfg = LearnerConfig(beta=beta, kl_measure_every=kl_measure_every, learning_rate=1e-2)
    learner = Learner(cfg, tiny_model_dir, device="cpu")
    calls = []
    original = learner.model.disable_adapter

    def counting_disable_adapter():
        calls.append(learner.step_count)
        return original()

    monkeypatch.setattr(learner.model, "disable_adapter", counting_disable_adapter)
    measured = [learner.step(group_records(learner)).kl_measured for _ in range(4)]
    assert len(calls) == passes  # one reference pass per micro-batch of a measuring step
    assert measured == [s in calls for s in range(4)]


# Tolerance of kl_ref on the untrained policy: the adapter starts with B = 0 (or the copy is
# exact), so policy and reference run the same arithmetic; float32 and bf16 alike give
# a KL within rounding of 0. After three steps that moved the policy the KL is far above it.
BASE_KL_TOLERANCE = {"float32": 1e-6, "bfloat16": 1e-4}


@pytest.mark.parametrize(
    "use_lora, precision", [(True, "float32"), (False, "float32"), (True, "bfloat16")]
)
def test_kl_is_measured_at_beta_zero_from_zero_to_positive(tiny_model_dir, use_lora, precision):
    cfg = LearnerConfig(
        beta=0.0, use_lora=use_lora, precision=precision, learning_rate=3e-2 if use_lora else 3e-3
    )
    learner = Learner(cfg, tiny_model_dir, device="cpu")
    first = learner.step(group_records(learner))
    assert first.kl_measured and first.kl_coef == 0.0
    assert abs(first.loss.kl_ref) <= BASE_KL_TOLERANCE[precision]
    assert first.loss.kl_loss == 0.0
    for _ in range(3):
        last = learner.step(group_records(learner))
    assert last.kl_measured and last.loss.kl_ref > 100 * BASE_KL_TOLERANCE[precision]
    assert last.as_values()["loss/kl_ref"] == last.loss.kl_ref


def test_kl_not_measured_is_left_out_of_the_metrics(tiny_model_dir):
    learner = Learner(LearnerConfig(kl_measure_every=0), tiny_model_dir, device="cpu")
    metrics = learner.step(group_records(learner))
    assert not metrics.kl_measured and metrics.loss.kl_ref is None
    values = metrics.as_values()
    assert "loss/kl_ref" not in values and values["kl_measured"] == 0.0
    assert learner.reference is None
    full = Learner(LearnerConfig(kl_measure_every=0, use_lora=False), tiny_model_dir, device="cpu")
    assert full.reference is None  # no step needs it: no copy of the weights
    assert Learner(LearnerConfig(use_lora=False), tiny_model_dir, device="cpu").reference is not None


def test_step_beta_follows_the_schedule_and_the_controller(tiny_model_dir):
    scheduled = Learner(
        LearnerConfig(beta=0.0, beta_schedule="linear", beta_end=0.3, beta_schedule_steps=3, learning_rate=1e-2),
        tiny_model_dir, device="cpu",
    )  # fmt: skip
    steps = [scheduled.step(group_records(scheduled)) for _ in range(5)]
    assert [m.kl_coef for m in steps] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.3])
    assert [m.as_values()["kl_coef"] for m in steps] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.3])
    assert steps[2].loss.kl_loss == pytest.approx(0.2 * steps[2].loss.kl_ref, rel=1e-4)

    # The untrained policy's KL (about 0) is far under target: each step lowers beta by
    # 20% x samples / horizon = 20% x 2 / 10.
    adaptive = Learner(
        LearnerConfig(beta=0.1, adap_kl_ctrl=True, target=0.5, horizon=10, learning_rate=1e-2),
        tiny_model_dir, device="cpu",
    )  # fmt: skip
    betas = [adaptive.step(group_records(adaptive)).kl_coef for _ in range(3)]
    assert betas == pytest.approx([0.1, 0.1 * 0.96, 0.1 * 0.96**2])


def test_kl_to_reference_grows_from_zero(tiny_model_dir):
    learner = Learner(
        LearnerConfig(beta=0.1, learning_rate=3e-2), tiny_model_dir, device="cpu"
    )
    first = learner.step(group_records(learner))
    assert first.loss.kl_ref == pytest.approx(
        0.0, abs=1e-6
    )  # LoRA starts at the base model
    for _ in range(3):
        last = learner.step(group_records(learner))
    assert last.loss.kl_ref > 1e-4 and last.loss.kl_loss == pytest.approx(
        0.1 * last.loss.kl_ref, rel=1e-4
    )


def test_decoupled_iterations_recompute_old_policy(tiny_model_dir):
    cfg = LearnerConfig(
        num_iterations=3, learning_rate=5e-2, epsilon=0.01, epsilon_high=0.01
    )
    learner = Learner(cfg, tiny_model_dir, device="cpu")
    metrics = learner.step(group_records(learner))
    assert metrics.step == 3
    # by the third pass the policy has moved past the tight clip on some tokens
    assert metrics.loss.clip_high_frac + metrics.loss.clip_low_frac > 0


def test_stale_batch_trains_nothing(tiny_model_dir):
    learner = Learner(LearnerConfig(max_policy_lag=1), tiny_model_dir, device="cpu")
    learner.policy_version = 5
    metrics = learner.step(group_records(learner, policy_version=3))
    assert metrics.dropped_stale == 2 and metrics.loss is None and metrics.step == 0
    assert metrics.as_values()["lag/2"] == 2.0


def test_bypass_clips_against_the_behaviour_policy(tiny_model_dir):
    learner = Learner(LearnerConfig(anchor="bypass"), tiny_model_dir, device="cpu")
    records = group_records(learner)
    records = [r for r in records if r["advantage"] > 0]  # only the favoured completion
    # mu gave these tokens far less mass than the learner does: ratio >> 1 + epsilon_high
    records[0]["behaviour_logprobs"] = [
        lp - 3.0 for lp in records[0]["behaviour_logprobs"]
    ]
    metrics = learner.step(records)
    assert metrics.loss.clip_high_frac == 1.0
    assert metrics.loss.is_weight_mean == 1.0
    assert metrics.grad_norm == 0.0  # every token clipped: no gradient
