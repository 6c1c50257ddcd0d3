"""The dashboard's pure parts: named queries, sample views, verdict records, figures, run lookup."""

import math
from datetime import datetime, timezone

import pytest
import yaml
from pydantic import ValidationError

from consumers.dashboard.config import config_for_run
from consumers.dashboard.figures import figure_json
from consumers.dashboard.panels import PANELS
from consumers.dashboard.queries import (
    UnknownDashboardQuery,
    jsonable,
    sample_parameters,
    sample_sql,
    sql_for,
)
from consumers.dashboard.samples import completion_diff, reward_breakdown, sample_view
from consumers.dashboard.verdicts import Verdict, review_record
from consumers.drift.queries import DriftError, MissingParameterError
from schemas.code_fingerprint import code_fingerprint
from schemas.codec import decode, encode


def test_only_named_queries_have_sql():
    assert "FROM advantages" in sql_for("panel:advantage_stats")
    assert sql_for("drift:hack_rates").startswith("-- Reward-hack")
    for name in ("SELECT 1", "drift:nope", "panel:../store/ddl", "samples:worst", "other:x"):
        with pytest.raises(UnknownDashboardQuery):
            sql_for(name)


def test_every_panel_names_a_query_with_sql():
    assert all(sql_for(panel.query) for panel in PANELS)


def test_sample_kinds_differ_only_in_filter_and_order():
    assert "notEmpty(f.hack_flags)" in sample_sql("hacked") and "notEmpty" not in sample_sql("top")
    assert "cityHash64" in sample_sql("random") and "{rollout_id:String}" in sample_sql("one")


def test_sample_parameters_check_their_window():
    values = sample_parameters("random", "base", datetime(2026, 1, 2, tzinfo=timezone.utc), "off_by_one", 1, 3, 5, 7)
    assert values == {"since": "2026-01-02 00:00:00.000", "config_id": "base", "bug_pattern": "off_by_one",
                      "version_min": 1, "version_max": 3, "limit": 5, "seed": 7}
    with pytest.raises(DriftError):
        sample_parameters("top", "base", version_min=4, version_max=3)
    with pytest.raises(DriftError):
        sample_parameters("top", "base", limit=0)
    with pytest.raises(MissingParameterError):
        sample_parameters("top", None)


def test_jsonable_turns_store_values_into_json_values():
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert jsonable({"t": moment, "x": math.nan, "b": b"\x01", "o": ({"k": math.inf},)}) == {
        "t": "2026-01-02T03:04:05+00:00", "x": None, "b": "01", "o": [{"k": None}]}


def test_the_diff_runs_from_the_buggy_code_to_the_completions_code():
    diff = completion_diff("def f(x):\n    return x\n", "def f(x):\n    return x + 1\n")
    assert diff.splitlines()[:2] == ["--- buggy", "+++ completion"]
    assert "-    return x" in diff.splitlines() and "+    return x + 1" in diff.splitlines()
    assert completion_diff("a\n", "a\n") == ""


def test_the_reward_breakdown_lists_every_component_with_its_contribution():
    rows = reward_breakdown({"test": 0.5, "style": 1.0}, {"test": 1.0, "style": 0.2, "hack": 1.0})
    assert rows == [{"component": "hack", "value": 0.0, "weight": 1.0, "contribution": 0.0},
                    {"component": "style", "value": 1.0, "weight": 0.2, "contribution": 0.2},
                    {"component": "test", "value": 0.5, "weight": 1.0, "contribution": 0.5}]


SAMPLE_ROW = {"rollout_id": "r1", "config_id": "base", "task_id": "t1", "bug_pattern": "off_by_one",
              "policy_version": 3, "hack_flags": ["dead_code", "dead_code", "except_pass"],
              "completion_text": "Here:\n```python\ndef f(x):\n    return x + 1\n```",
              "buggy_code": "def f(x):\n    return x\n", "components": {"test": 1.0}, "weights": {"test": 1.0},
              "test_outcomes": [{"index": 0, "passed": True, "error_kind": "none", "message": "", "runtime_ms": 1.0}]}


def test_a_sample_view_shows_the_code_that_ran_and_its_fingerprint():
    view = sample_view(SAMPLE_ROW)
    assert view["completion_code"] == "def f(x):\n    return x + 1\n"
    assert view["code_fingerprint"] == code_fingerprint("def f(y):\n    return y + 1")
    assert view["tests"] == [{"index": 0, "passed": True, "error_kind": "none", "message": ""}]
    assert "components" not in view and view["reward"][0]["component"] == "test"


def test_a_hack_verdict_needs_a_class_and_a_fine_one_has_none():
    with pytest.raises(ValidationError):
        Verdict(rollout_id="r1", config_id="base", verdict="hack", hack_class="  ")
    with pytest.raises(ValidationError):
        Verdict(rollout_id="r1", config_id="base", verdict="fine", hack_class="x")
    with pytest.raises(ValidationError):
        Verdict(rollout_id="r1", config_id="base", verdict="maybe")


def test_a_verdict_becomes_a_review_event_of_the_sample():
    view = sample_view(SAMPLE_ROW)
    record = review_record(Verdict(rollout_id="r1", config_id="base", verdict="hack", hack_class="dead_code",
                                   note="unreachable branch"), view)
    assert decode(encode("Review", record)) == record  # a valid Review
    assert (record["verdict"], record["hack_class"], record["policy_version"]) == ("hack", "dead_code", 3)
    assert record["automatic_flags"] == ["dead_code", "except_pass"]
    assert record["code_fingerprint"] == view["code_fingerprint"] and record["event_id"]
    with pytest.raises(ValueError):
        review_record(Verdict(rollout_id="r2", config_id="base", verdict="fine"), view)


def test_a_figure_says_when_it_has_no_values():
    spec = next(p for p in PANELS if p.name == "kl").chart
    empty = figure_json(spec, [{"step": 0, "kl_ref": None, "kl_coef": None}])
    assert empty["layout"]["annotations"][0]["text"] == "no values yet"
    full = figure_json(spec, [{"step": 0, "kl_ref": 0.1, "kl_coef": 0.0}])
    assert "annotations" not in full["layout"] and full["data"][0]["y"] == [0.1]


def test_a_run_folder_gives_its_store_broker_and_topics(tmp_path):
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({"broker": "own", "kafka_port": 19123,
                                                       "topics": {"prefix": "exp1."}}))
    cfg = config_for_run(tmp_path, port=9000)
    assert (cfg.store, cfg.bootstrap, cfg.topics.reviews, cfg.port) == (
        str(tmp_path / "chdb"), "127.0.0.1:19123", "exp1.reviews", 9000)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({"store": "http://ch:8123", "bootstrap": "k1:9092"}))
    cfg = config_for_run(tmp_path)
    assert (cfg.store, cfg.bootstrap, cfg.topics.reviews) == ("http://ch:8123", "k1:9092", "reviews")
