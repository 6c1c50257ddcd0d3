"""The learner service through the real broker: it learns a toy preference, publishes
policy versions and metrics, and resumes after SIGKILL without skipping or repeating."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from infra.platform.kafka_io import EventProducer, read_topic
from infra.platform.topics import Topics, ensure_topics
from learner.config import LearnerConfig
from learner.model import load_policy, token_logprobs
from learner.service import LearnerService, LearnRunConfig
from learner.tiny import build_tiny_llama

pytestmark = pytest.mark.kafka

PROMPT = [1, 2, 3, 4]
GOOD, BAD = [10, 11, 12], [20, 21, 22]


def completion_logprob(model, completion) -> float:
    ids = torch.tensor([PROMPT + completion])
    with torch.no_grad():
        lp = token_logprobs(model, ids, torch.ones_like(ids), len(PROMPT), 1.0)
    return float(lp.sum())


def behaviour(model, completion) -> list[float]:
    ids = torch.tensor([PROMPT + completion])
    with torch.no_grad():
        return token_logprobs(model, ids, torch.ones_like(ids), len(PROMPT), 1.0)[0].tolist()


def advantage_record(config_id, group, i, completion, adv, logprobs):
    return {"config_id": config_id, "rollout_id": f"{group}-{i}", "feedback_event_id": f"f-{group}-{i}",
            "group_id": group, "task_id": "toy", "bug_pattern": "toy", "sample_index": i, "group_size": 2,
            "group_members": 2, "group_complete": True, "policy_version": 0, "reward_raw": float(adv > 0),
            "components": {"test": float(adv > 0)}, "weights": {"test": 1.0}, "reward_enhanced": float(adv > 0),
            "reward_normalised": adv, "advantage": adv, "ema_baseline": 0.5, "global_count": 2, "global_mean": 0.5,
            "global_std": 0.5, "group_mean": 0.5, "group_std": 0.5, "warmup": False, "hack_flags": [],
            "prompt_token_ids": PROMPT, "completion_token_ids": completion, "behaviour_logprobs": logprobs,
            "finish_reason": "stop"}


def publish_toy_stream(bootstrap, config_id, n_groups, model_dir, cfg, behaviour_of=None):
    """Groups of (GOOD, +1) and (BAD, -1); behaviour logprobs from the learner's own model
    unless `behaviour_of(completion)` gives them (as a generation engine would)."""
    model = load_policy(model_dir, cfg, "cpu")
    behaviour_of = behaviour_of or (lambda completion: behaviour(model, completion))
    good_lp, bad_lp = behaviour_of(GOOD), behaviour_of(BAD)
    with EventProducer(bootstrap) as producer:
        for g in range(n_groups):
            group = f"{config_id}-g{g:03d}"
            producer.send(Topics().advantages(config_id), group, "Advantage",
                          advantage_record(config_id, group, 0, GOOD, 1.0, good_lp))
            producer.send(Topics().advantages(config_id), group, "Advantage",
                          advantage_record(config_id, group, 1, BAD, -1.0, bad_lp))
    return model


def learner_cfg(tmp: Path, **kw) -> LearnerConfig:
    return LearnerConfig(learning_rate=5e-3, groups_per_step=2, max_steps=50, warmup_steps=0, beta=0.02,
                         checkpoint_dir=tmp / "ckpt", publish_dir=tmp / "policy", max_policy_lag=100, lora_r=4,
                         lora_alpha=8, **kw)


def metrics_of(bootstrap, config_id, learner_id):
    return [e.record for e in read_topic(Topics().metrics, bootstrap) if e.record["config_id"] == config_id
            and e.record["labels"].get("learner_id") == learner_id]


@pytest.fixture
def setup(kafka_bootstrap, kafka_admin, tmp_path):
    config_id = f"toy{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_admin, Topics().event_specs() + [Topics().advantages_spec(config_id)])
    model_dir = build_tiny_llama(tmp_path / "tiny", seed=0)
    return config_id, model_dir


def test_learns_toy_preference_and_publishes_versions(kafka_bootstrap, setup, tmp_path):
    config_id, model_dir = setup
    cfg = learner_cfg(tmp_path)
    model = publish_toy_stream(kafka_bootstrap, config_id, 16, model_dir, cfg)
    before = completion_logprob(model, GOOD), completion_logprob(model, BAD)

    service = LearnerService(LearnRunConfig(config_id=config_id, model_dir=model_dir, steps=8, learner=cfg),
                             kafka_bootstrap)
    assert service.run(progress=False) == 8
    service.close()
    trained = service.learner.model
    after = completion_logprob(trained, GOOD), completion_logprob(trained, BAD)
    assert after[0] > before[0] + 0.5 and after[1] < before[1]  # favoured up, disfavoured down
    assert (after[0] - after[1]) - (before[0] - before[1]) > 1.0
    assert service.learner.policy_version == 8

    versions = [e.record["version"] for e in read_topic(Topics().policy, kafka_bootstrap)
                if e.record["config_id"] == config_id]
    assert versions == list(range(1, 9))
    metrics = metrics_of(kafka_bootstrap, config_id, "learner")
    assert [m["step"] for m in metrics] == list(range(1, 9))
    assert all("loss/kl_ref" in m["values"] and "loss/clip_high_frac" in m["values"] for m in metrics)
    assert metrics[-1]["values"]["loss/kl_ref"] > 0
    assert all(m["values"]["kl_measured"] == 1.0 and m["values"]["kl_coef"] == pytest.approx(0.02) for m in metrics)


def test_dynamic_sampling_trains_only_mixed_groups_and_tells_the_generator(kafka_bootstrap, setup, tmp_path):
    from learner.config import DROPPED_METRIC, DROPPED_SOURCE
    from producers.generator.service import LearnerFeed

    config_id, model_dir = setup
    cfg = learner_cfg(tmp_path, drop_uniform_groups=True)
    model = load_policy(model_dir, cfg, "cpu")
    good_lp, bad_lp = behaviour(model, GOOD), behaviour(model, BAD)
    uniform = {0, 2, 5}  # groups whose two samples both failed: advantages 0 and 0
    with EventProducer(kafka_bootstrap) as producer:
        for g in range(7):
            group = f"{config_id}-g{g:03d}"
            for i, (completion, lp, adv) in enumerate([(GOOD, good_lp, 1.0), (BAD, bad_lp, -1.0)]):
                adv = 0.0 if g in uniform else adv
                # one key, so one partition: the learner reads the groups in this order
                producer.send(Topics().advantages(config_id), config_id, "Advantage",
                              advantage_record(config_id, group, i, completion, adv, lp))
    service = LearnerService(LearnRunConfig(config_id=config_id, model_dir=model_dir, steps=2, learner=cfg),
                             kafka_bootstrap)
    assert service.run(progress=False) == 2
    service.close()
    steps = [m for m in metrics_of(kafka_bootstrap, config_id, "learner") if m["source"] == "learner"]
    assert [m["values"]["groups_dropped_uniform"] for m in steps] == [2.0, 3.0]
    assert [m["values"]["num_groups"] for m in steps] == [2.0, 2.0]  # every step full
    drops = [m["values"][DROPPED_METRIC] for m in metrics_of(kafka_bootstrap, config_id, "learner")
             if m["source"] == DROPPED_SOURCE]
    assert drops == [1.0, 2.0, 3.0]
    feed = LearnerFeed(Topics(), config_id, kafka_bootstrap)
    deadline = time.monotonic() + 30
    while feed.dropped_groups < 3 and time.monotonic() < deadline:
        feed.poll(1.0)
    feed.close()
    assert feed.dropped_groups == 3


def test_learns_toy_preference_from_int8_engine_behaviour_logprobs(kafka_bootstrap, kafka_admin, tmp_path):
    """Behaviour logprobs of the quantized ctranslate2 engine differ from the learner's fp32
    ones; truncated importance sampling corrects for that and the preference is still learned."""
    from producers.generator.backends.ct2 import CTranslate2Backend
    from producers.generator.model_store import build_tiny_model, cached_smollm2

    config_id = f"toy{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_admin, Topics().event_specs() + [Topics().advantages_spec(config_id)])
    model_dir = build_tiny_model(tmp_path / "tiny", cached_smollm2(), initializer_range=0.5)
    engine = CTranslate2Backend(model_dir, compute_type="int8", cache_dir=tmp_path / "ct2")
    cfg = learner_cfg(tmp_path)
    model = publish_toy_stream(kafka_bootstrap, config_id, 16, model_dir, cfg,
                               behaviour_of=lambda completion: engine.score(PROMPT, completion))
    before = completion_logprob(model, GOOD), completion_logprob(model, BAD)
    gap = torch.tensor(engine.score(PROMPT, GOOD)) - torch.tensor(behaviour(model, GOOD))
    assert gap.abs().max().item() > 1e-3  # the engine is not the learner

    service = LearnerService(LearnRunConfig(config_id=config_id, model_dir=model_dir, steps=8, learner=cfg),
                             kafka_bootstrap)
    assert service.run(progress=False) == 8
    service.close()
    after = completion_logprob(service.learner.model, GOOD), completion_logprob(service.learner.model, BAD)
    assert after[0] > before[0] + 0.5 and after[1] < before[1]
    first = metrics_of(kafka_bootstrap, config_id, "learner")[0]["values"]
    assert first["loss/mismatch_abs_logp"] > 1e-3 and first["loss/is_weight_mean"] != 1.0


def run_learner(tmp: Path, config_id, model_dir, steps, learner_id, cfg: LearnerConfig):
    path = tmp / f"{learner_id}.yaml"
    run = LearnRunConfig(config_id=config_id, model_dir=model_dir, steps=steps, learner=cfg, learner_id=learner_id)
    path.write_text(yaml.safe_dump(run.model_dump(mode="json")))
    return subprocess.Popen([sys.executable, "-m", "infra.compose.cli", "learn", "--config", str(path)],
                            env={**os.environ, "PYTHONPATH": os.getcwd()}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def adapter_tensors(policy_dir: Path, version: int) -> dict:
    files = list((policy_dir / f"v-{version:08d}").rglob("*.safetensors"))
    assert files, f"no weights for version {version} under {policy_dir}"
    return load_file(files[0])


def test_sigkill_between_steps_resumes_bit_exact_without_gap_or_repeat(kafka_bootstrap, kafka_admin, setup, tmp_path):
    """The crash run trains 3 steps on the first part of the stream (which ends half-way
    through a group), is SIGKILLed while it waits for more, and resumes once the rest
    arrives; an uninterrupted run then reads the same stream in one go."""
    _, model_dir = setup
    # one partition: the stream then has one total order, which is what "the same stream"
    # means for bit-exactness (across partitions the consumer's interleaving is not fixed)
    config_id = f"resume{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_admin, [Topics().advantages_spec(config_id, partitions=1)])
    steps = 6
    cfg = learner_cfg(tmp_path / "x")
    model = load_policy(model_dir, cfg, "cpu")
    good_lp, bad_lp = behaviour(model, GOOD), behaviour(model, BAD)
    topic = Topics().advantages(config_id)
    records = []
    for g in range(2 * steps):
        group = f"{config_id}-g{g:03d}"
        records += [advantage_record(config_id, group, 0, GOOD, 1.0, good_lp),
                    advantage_record(config_id, group, 1, BAD, -1.0, bad_lp)]
    first, rest = records[:13], records[13:]  # 3 steps of 2 groups, then one member of the 7th group

    def publish(part):
        with EventProducer(kafka_bootstrap) as producer:
            for r in part:
                producer.send(topic, r["group_id"], "Advantage", r)

    publish(first)
    crash_cfg = learner_cfg(tmp_path / "crash")
    proc = run_learner(tmp_path, config_id, model_dir, steps, "crash", crash_cfg)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(metrics_of(kafka_bootstrap, config_id, "crash")) < 3:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(1)
    time.sleep(2)  # it now waits for the 4th step's groups
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(metrics_of(kafka_bootstrap, config_id, "crash")) == 3
    publish(rest)
    proc = run_learner(tmp_path, config_id, model_dir, steps, "crash", crash_cfg)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]

    straight_cfg = learner_cfg(tmp_path / "straight")
    proc = run_learner(tmp_path, config_id, model_dir, steps, "straight", straight_cfg)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]

    straight = metrics_of(kafka_bootstrap, config_id, "straight")
    crashed = metrics_of(kafka_bootstrap, config_id, "crash")
    assert [m["step"] for m in crashed] == list(range(1, steps + 1))  # no step lost or redone
    assert [m["labels"]["batch_digest"] for m in crashed] == [m["labels"]["batch_digest"] for m in straight]
    assert len({m["labels"]["batch_digest"] for m in crashed}) == steps  # no batch trained twice

    a = adapter_tensors(straight_cfg.publish_dir, steps)
    b = adapter_tensors(crash_cfg.publish_dir, steps)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
