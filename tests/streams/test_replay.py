"""Replay the feedback log of a live reshape worker: same config -> the same advantages;
a narrower clip -> a second topic whose advantages are the first ones clipped."""

import pytest
import yaml

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import Topics
from streams.app import ensure_app_topics
from streams.replay import ReplayOptions, run_replay
from streams.reshaping.config import PRESETS_DIR, config_from_dict, load_preset
from tests.streams.helpers import WorkerProcess, feedback, isolated_settings, read_all, unique

GROUPS, SIZE = 30, 4


def test_replay_reproduces_and_a_new_config_differs_as_predicted(kafka_bootstrap, kafka_admin, tmp_path):
    cfg = load_preset("raw")
    settings = isolated_settings(agents=("reshape",))
    app_id = unique("replay")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    passes = [0.0, 0.25, 1.0, 0.5, 0.75]
    with EventProducer(kafka_bootstrap) as producer:
        for g in range(GROUPS):
            for i in range(SIZE):
                fb = feedback(f"g{g}", i, SIZE, passes[(g + 2 * i) % 5], created_at_ms=1_700_000_000_000 + g)
                producer.send(settings.topics.feedback, fb["group_id"], "Feedback", fb)
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "raw.yaml", settings, kafka_bootstrap).start()
    try:
        live = read_all(kafka_bootstrap, settings.topics.advantages(cfg.config_id), GROUPS * SIZE, proc=worker)
    finally:
        worker.stop()

    # same config, its own namespace (else it would append to the live topic)
    into = Topics(prefix=f"{settings.topics.prefix}replay.")
    report = run_replay(cfg, ReplayOptions(bootstrap=kafka_bootstrap, settings=settings, into=into))
    assert report.topic == into.advantages(cfg.config_id)
    assert report.feedback == GROUPS * SIZE and report.advantages == GROUPS * SIZE
    replayed = read_all(kafka_bootstrap, report.topic, GROUPS * SIZE, settle_s=0.2)
    assert {a["rollout_id"]: a for a in replayed} == {a["rollout_id"]: a for a in live}

    clipped_cfg = config_from_dict({**cfg.model_dump(mode="json"),
                                    "transform": {**cfg.transform.model_dump(mode="json"), "clip": [-0.5, 0.5]}})
    report2 = run_replay(clipped_cfg, ReplayOptions(bootstrap=kafka_bootstrap, settings=settings))
    assert report2.topic == settings.topics.advantages(clipped_cfg.config_id) != settings.topics.advantages(cfg.config_id)
    clipped = {a["rollout_id"]: a["advantage"] for a in read_all(kafka_bootstrap, report2.topic, GROUPS * SIZE,
                                                                 settle_s=0.2)}
    original = {a["rollout_id"]: a["advantage"] for a in live}
    assert set(clipped) == set(original)
    assert any(abs(v) > 0.5 for v in original.values())  # the change matters
    for rid, adv in original.items():
        assert clipped[rid] == pytest.approx(max(-0.5, min(0.5, adv)), abs=1e-6)


@pytest.mark.parametrize("mode", ["batch", "running"])
def test_replay_reproduces_each_normalisation_mode_with_environment_failures(kafka_bootstrap, kafka_admin, tmp_path,
                                                                             mode):
    """Batches are formed per partition by log order and log time, so the replay forms the
    live worker's batches (its last part-filled batches released by the ticks' deadline,
    the replay's at the end); excluded members and uncompared groups come out alike."""
    data = load_preset("raw").model_dump(mode="json")
    data["normalisation"].update(mode=mode, batch_groups=4, batch_deadline_ms=2000, warmup_batches=1,
                                 warmup_min_std=0.05)
    cfg = config_from_dict(data)
    config_file = tmp_path / f"{mode}.yaml"
    config_file.write_text(yaml.safe_dump(data))
    settings = isolated_settings(agents=("reshape",))
    app_id = unique(f"replay-{mode}")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    passes = [0.0, 0.25, 1.0, 0.5, 0.75]
    with EventProducer(kafka_bootstrap) as producer:
        for g in range(GROUPS):
            for i in range(SIZE):
                fb = feedback(f"g{g}", i, SIZE, passes[(g + 2 * i) % 5], created_at_ms=1_700_000_000_000 + g)
                # one failure in some groups; three (one comparable member left) in others
                fb["environment_failure"] = (g % 7 == 3 and i == 1) or (g % 11 == 5 and i < 3)
                producer.send(settings.topics.feedback, fb["group_id"], "Feedback", fb)
    worker = WorkerProcess(tmp_path, app_id, config_file, settings, kafka_bootstrap).start()
    try:
        live = read_all(kafka_bootstrap, settings.topics.advantages(cfg.config_id), GROUPS * SIZE, proc=worker)
    finally:
        worker.stop()
    assert len(live) == GROUPS * SIZE
    by_group = {}
    for a in live:
        by_group.setdefault(a["group_id"], []).append(a)
    assert all(a["excluded"] for a in by_group["g5"]) and sum(a["excluded"] for a in by_group["g3"]) == 1
    assert {a["norm_mode"] for a in live} == {mode}
    if mode == "batch":  # groups shared their batch's centre and scale
        compared = {a["group_id"] for a in live if not a["excluded"]}
        scales = {(a["norm_centre"], a["norm_scale"]) for a in live if not a["excluded"]}
        assert len(scales) <= len(compared) // 2

    into = Topics(prefix=f"{settings.topics.prefix}replay.")
    report = run_replay(cfg, ReplayOptions(bootstrap=kafka_bootstrap, settings=settings, into=into))
    replayed = read_all(kafka_bootstrap, report.topic, GROUPS * SIZE, settle_s=0.2)
    assert {a["rollout_id"]: a for a in replayed} == {a["rollout_id"]: a for a in live}
