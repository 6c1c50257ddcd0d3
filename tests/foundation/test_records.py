"""``build_record``: the one constructor of every payload's records."""

import pytest

from schemas.codec import CODEC, new_event_fields
from schemas.records import build_record
from tests.foundation.samples import SAMPLES


def test_a_record_missing_only_defaults_is_completed_from_the_schema():
    rec = build_record("Feedback", **{**new_event_fields(), **SAMPLES["Feedback"]})
    schema_fields = {f["name"]: f for f in CODEC.schema("Feedback")["fields"]}
    assert set(rec) == set(schema_fields)
    for name, field in schema_fields.items():
        if name not in SAMPLES["Feedback"] and "default" in field and name not in new_event_fields():
            assert rec[name] == field["default"], name


def test_list_defaults_are_never_shared_between_records():
    base = {**new_event_fields(), **SAMPLES["Feedback"]}
    base.pop("hack_flags", None)
    a, b = build_record("Feedback", **base), build_record("Feedback", **base)
    a["hack_flags"].append("x")
    assert b["hack_flags"] == []


def test_unknown_and_missing_fields_are_named():
    full = {**new_event_fields(), **SAMPLES["Metric"]}
    with pytest.raises(ValueError, match="Metric: unknown field.*colour"):
        build_record("Metric", **full, colour="red")
    del full["source"], full["step"]
    with pytest.raises(ValueError, match="Metric: missing required field.*source, step"):
        build_record("Metric", **full)


def test_left_out_fields_are_not_required_and_nothing_else_is_filled_for_them():
    body = {k: v for k, v in SAMPLES["Metric"].items()}
    rec = build_record("Metric", leave_out=("event_id", "created_at_ms"), **body)
    assert "event_id" not in rec and "created_at_ms" not in rec
    with pytest.raises(ValueError, match="missing required field.*created_at_ms"):
        build_record("Metric", leave_out=("event_id",), **body)


def test_nested_records_are_completed_too():
    fb = {**new_event_fields(), **SAMPLES["Feedback"],
          "test_outcomes": [{"index": 0, "passed": True, "error_kind": "none"}]}
    rec = build_record("Feedback", **fb)
    assert rec["test_outcomes"] == [{"index": 0, "passed": True, "error_kind": "none", "message": "",
                                     "runtime_ms": 0.0}]
    fb["test_outcomes"] = [{"index": 0, "passed": True}]
    with pytest.raises(ValueError, match=r"Feedback.test_outcomes\[0\]: missing required field.*error_kind"):
        build_record("Feedback", **fb)
