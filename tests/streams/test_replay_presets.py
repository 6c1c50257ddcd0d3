"""A replay of stored feedback under the layered, binary and full presets, through the real
broker: each config writes its own advantage stream, every record carries every component and
weight, and the components are the ones each config defines for those outcomes."""

import math

import pytest

from infra.platform.kafka_io import EventProducer
from infra.platform.topics import ensure_topics
from streams.replay import ReplayOptions, run_replay
from streams.reshaping.config import COMPONENTS, load_preset
from tests import factories
from tests.streams.helpers import isolated_settings, read_all

SIZE = 4
CHECKED_OK = {"adversarial_checked": 8, "adversarial_mismatches": 0, "rename_checked": True, "rename_passed": True}
# rollout -> (feedback fields; R_test under layered, binary and full; full's hack, robust and exec)
CASES = {
    "honest": ({**factories.run_fields([True] * 4), **CHECKED_OK, "exec_line_coverage": 0.5},
               1.0, 1.0, 1.0, 0.0, 1.0, 0.5 / 4),
    "special_cased": ({**factories.run_fields([True] * 4), "hack_flags": ["hardcoded_output"],
                       "adversarial_checked": 8, "adversarial_mismatches": 6, "rename_checked": True,
                       "rename_passed": True, "exec_line_coverage": 1.0, "exec_tracer_use": True},
                      1.0, 1.0, 1.0, -1.0, (0.25 + 1.0) / 2, 0.0),
    "partial": ({**factories.run_fields([True, True, False, False]), **CHECKED_OK, "exec_line_coverage": 1.0},
                0.4 + 0.6 * 0.5, 0.0, 0.5, 0.0, 0.5, 1.0 / 4),
    "crashes": ({**factories.run_fields([False] * 4), "error_kind": "crash",
                 "test_outcomes": [{"index": i, "passed": False, "error_kind": "crash"} for i in range(4)]},
                0.2, 0.0, 0.0, 0.0, 0.0, 0.0),
    "no_load": ({**factories.run_fields([False] * 4), "error_kind": "import", "test_outcomes": []},
                0.1, 0.0, 0.0, 0.0, 0.0, 0.0),
    "unparsable": ({**factories.run_fields([False] * 4), "error_kind": "syntax", "style_class": "unparsable",
                    "test_outcomes": []}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    "wrong": ({**factories.run_fields([False] * 4), "hack_flags": ["except_pass", "dead_code"]},
              0.3, 0.0, 0.0, -2.0, 0.0, 0.0),
    "wrong_too": (factories.run_fields([False] * 4), 0.3, 0.0, 0.0, 0.0, 0.0, 0.0),
}
COLUMN = {"layered": 1, "binary": 2, "full": 3}


def stored_feedback() -> list[dict]:
    records = []
    for i, (name, (fields, *_)) in enumerate(CASES.items()):
        group = f"g{i // SIZE}"
        records.append(factories.feedback(**{
            "event_id": f"fb-{name}", "created_at_ms": factories.T0 + i, "rollout_id": name, "group_id": group,
            "task_id": f"task-{group}", "sample_index": i % SIZE, "group_size": SIZE, "policy_version": 1000,
            "tree_edit_distance": 0.25, **fields}))
    return records


def test_replay_under_layered_binary_and_full_gives_each_its_components(kafka_bootstrap, kafka_admin):
    settings = isolated_settings()
    ensure_topics(kafka_admin, [s for s in settings.topics.event_specs(settings.partitions)
                                if s.name == settings.topics.feedback])
    stored = stored_feedback()
    with EventProducer(kafka_bootstrap) as producer:
        for fb in stored:
            producer.send(settings.topics.feedback, fb["group_id"], "Feedback", fb)

    topics = set()
    for preset, column in COLUMN.items():
        cfg = load_preset(preset)
        report = run_replay(cfg, ReplayOptions(bootstrap=kafka_bootstrap, settings=settings, processes=1))
        assert (report.feedback, report.advantages, report.dead_letters) == (len(stored), len(stored), 0)
        topics.add(report.topic)
        replayed = {a["rollout_id"]: a for a in read_all(kafka_bootstrap, report.topic, len(stored), settle_s=0.2)}
        assert set(replayed) == set(CASES)
        for name, (_, *expected) in CASES.items():
            record = replayed[name]
            components, weights = record["components"], record["weights"]
            assert list(components) == list(weights) == list(COMPONENTS), (preset, name)
            assert components["test"] == pytest.approx(expected[column - 1], abs=1e-6), (preset, name)
            total = math.fsum(weights[c] * components[c] for c in COMPONENTS)
            assert record["reward_enhanced"] == pytest.approx(total, rel=1e-5, abs=1e-6), (preset, name)
            if preset == "full":
                hack, robust, exec_ = expected[3:]
                assert components["hack"] == pytest.approx(hack), name
                assert components["robust"] == pytest.approx(robust), name
                assert components["exec"] == pytest.approx(exec_), name
            else:  # the plain baselines pay nothing but the outcome
                assert {c: w for c, w in weights.items() if w} == {"test": 1.0}, (preset, name)
        if preset == "full":
            assert replayed["honest"]["reward_enhanced"] > replayed["special_cased"]["reward_enhanced"]
            assert replayed["honest"]["advantage"] > 0 > replayed["special_cased"]["advantage"]
    assert len(topics) == 3  # a stream per config
