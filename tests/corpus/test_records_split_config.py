"""Task records, the split by function, difficulty and the build config."""

import json

import pytest
from pydantic import ValidationError

from producers.corpus.config import CorpusBuildConfig
from producers.corpus.difficulty import difficulty
from producers.corpus.functions import SourceFunction
from producers.corpus.mutators import ALL_PATTERNS
from producers.corpus.records import TASK_FIELDS, TaskRecordError, make_task, read_tasks, write_tasks
from producers.corpus.split import split_of
from producers.corpus.summary import bug_diff, counts_by_pattern_and_split
from schemas.codec import SCHEMA_DIR

FUNCTION = SourceFunction(
    function_id="mbpp-0012", source="mbpp", entry_point="inc",
    reference_code="def inc(x):\n    return x + 1\n", tests=("assert inc(1) == 2",),
    description="add one")


def task(**changes):
    args = dict(split="train", pattern="operator_swap", index=0,
                buggy_code="def inc(x):\n    return x - 1\n", difficulty=0.4, seed=3)
    return make_task(FUNCTION, **{**args, **changes})


def test_task_has_exactly_the_schema_fields_less_the_envelope():
    schema_fields = [f["name"] for f in json.loads((SCHEMA_DIR / "task.avsc").read_text())["fields"]]
    expected = [f for f in schema_fields if f not in ("event_id", "schema_version", "created_at_ms")]
    record = task()
    assert list(record) == expected == list(TASK_FIELDS)
    assert record["task_id"] == "mbpp-0012-operator_swap-0"
    assert record["function_id"] == "mbpp-0012"
    assert record["tests"] == ["assert inc(1) == 2"] and record["test_imports"] == []


def test_jsonl_round_trip_and_bad_records(tmp_path):
    path = tmp_path / "tasks.jsonl"
    records = [task(), task(index=1)]
    assert write_tasks(path, records) == 2
    assert list(read_tasks(path)) == records
    with pytest.raises(TaskRecordError):
        write_tasks(path, [{**task(), "extra": 1}])
    path.write_text("{not json\n")
    with pytest.raises(TaskRecordError, match="not JSON"):
        list(read_tasks(path))


def test_split_is_by_function_deterministic_and_near_the_fraction():
    ids = [f"mbpp-{i:04d}" for i in range(1, 1001)]
    first = {i: split_of(i, "mbpp", 0, 0.2) for i in ids}
    assert first == {i: split_of(i, "mbpp", 0, 0.2) for i in ids}
    share = sum(s == "validation" for s in first.values()) / len(ids)
    assert 0.16 < share < 0.24
    other_seed = {i: split_of(i, "mbpp", 1, 0.2) for i in ids}
    assert other_seed != first
    assert set(first.values()) == {"train", "validation"}
    assert split_of("humaneval-0001", "humaneval", 0, 0.2) == "heldout"
    assert all(split_of(i, "mbpp", 0, 0.0) == "train" for i in ids[:50])
    assert all(split_of(i, "mbpp", 0, 1.0) == "validation" for i in ids[:50])


def test_difficulty_formula_by_hand():
    ten_lines = "\n".join(f"x{i} = {i}" for i in range(10)) + "\n\n# comment\n"
    assert difficulty(0.3, ten_lines) == pytest.approx(0.3 + 0.4 * 10 / 40)
    assert difficulty(0.9, "\n".join(["x = 1"] * 100)) == 1.0  # capped


def test_config_defaults_and_validation():
    config = CorpusBuildConfig()
    assert config.patterns == ALL_PATTERNS and config.validation_fraction == 0.2
    assert config.mutants_per_function_per_pattern == 1 and config.max_functions is None
    with pytest.raises(ValidationError, match="unknown bug patterns"):
        CorpusBuildConfig(patterns=("operator_swap", "typo"))
    with pytest.raises(ValidationError):
        CorpusBuildConfig(validation_fraction=1.5)
    with pytest.raises(ValidationError):
        CorpusBuildConfig(seeed=1)


def test_counts_and_diff():
    records = [task(), task(index=1, split="validation"), task(pattern="missing_colon")]
    counts = counts_by_pattern_and_split(records)
    assert counts == {"operator_swap": {"train": 1, "validation": 1, "heldout": 0},
                      "missing_colon": {"train": 1, "validation": 0, "heldout": 0}}
    diff = bug_diff(task())
    assert "-    return x + 1\n" in diff and "+    return x - 1\n" in diff
