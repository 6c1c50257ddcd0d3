"""Task records, the split by function, difficulty and the build config."""

import json

import pytest
from pydantic import ValidationError

from producers.corpus.config import CorpusBuildConfig
from producers.corpus.difficulty import difficulty
from producers.corpus.functions import SourceFunction
from producers.corpus.mutators import ALL_PATTERNS
from producers.corpus.records import TASK_FIELDS, TaskRecordError, make_task, read_tasks, write_tasks
from producers.corpus.split import HELDOUT_PATTERN, split_of, task_split
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
    assert counts == {"operator_swap": {"train": 1, "validation": 1, "heldout": 0, "heldout_pattern": 0},
                      "missing_colon": {"train": 1, "validation": 0, "heldout": 0, "heldout_pattern": 0}}
    diff = bug_diff(task())
    assert "-    return x + 1\n" in diff and "+    return x - 1\n" in diff


def test_a_held_out_pattern_is_never_trained_on_and_has_its_own_split():
    heldout = ("wrong_return",)
    assert task_split("train", "wrong_return", heldout) is None  # never built
    assert task_split("validation", "wrong_return", heldout) == HELDOUT_PATTERN
    assert task_split("heldout", "wrong_return", heldout) == "heldout"  # HumanEval keeps every pattern
    assert task_split("train", "operator_swap", heldout) == "train"
    assert task_split("validation", "operator_swap", heldout) == "validation"
    assert task_split("train", "wrong_return", ()) == "train"


def test_held_out_patterns_are_validated():
    assert CorpusBuildConfig().heldout_patterns == ()  # none by default
    config = CorpusBuildConfig(patterns=("operator_swap", "wrong_return"), heldout_patterns=("wrong_return",))
    assert config.heldout_patterns == ("wrong_return",)
    with pytest.raises(ValidationError, match="not among"):
        CorpusBuildConfig(patterns=("operator_swap",), heldout_patterns=("wrong_return",))
    with pytest.raises(ValidationError, match="every pattern is held out"):
        CorpusBuildConfig(patterns=("operator_swap",), heldout_patterns=("operator_swap",))
    with pytest.raises(ValidationError, match="twice"):
        CorpusBuildConfig(heldout_patterns=("operator_swap", "operator_swap"))


def test_visible_test_and_error_context_are_task_fields():
    record = task(tests=("assert inc(2) == 3",), visible_tests=("assert inc(1) == 2",),
                  error_context="expected 2, got 0")
    assert record["tests"] == ["assert inc(2) == 3"] and record["visible_tests"] == ["assert inc(1) == 2"]
    assert record["error_context"] == "expected 2, got 0"
    assert (task()["visible_tests"], task()["error_context"], task()["tests"]) == ([], "", ["assert inc(1) == 2"])


def test_an_old_task_record_without_the_new_fields_still_decodes():
    from schemas.codec import CODEC, Codec, load_schema_file, new_event_fields

    old_schema = load_schema_file(SCHEMA_DIR / "history" / "task-1.avsc")
    old_fields = {f["name"] for f in old_schema["fields"]}
    assert {"error_context", "visible_tests"}.isdisjoint(old_fields)
    writer = Codec()
    writer.register(old_schema)
    old = {**new_event_fields(), **{k: v for k, v in task(difficulty=0.5).items() if k in old_fields}}
    decoded = CODEC.decode(writer.encode("Task", old))  # the project's codec: the current schema
    assert decoded == {**old, "error_context": "", "visible_tests": []}
    assert decoded["tests"] == ["assert inc(1) == 2"]


def test_the_cache_key_follows_the_task_schema_and_the_sandbox(tmp_path):
    from producers.corpus.cache import TASK_SCHEMA, build_key, key_files

    files = key_files()
    assert TASK_SCHEMA in files and any(p.parts[-2:] == ("sandbox", "verdict.py") for p in files)
    schema = tmp_path / "task.avsc"
    schema.write_text(TASK_SCHEMA.read_text())
    before = build_key(CorpusBuildConfig(), [schema])
    schema.write_text(TASK_SCHEMA.read_text().replace('"default": ""', '"default": "-"'))
    assert build_key(CorpusBuildConfig(), [schema]) != before
    assert build_key(CorpusBuildConfig(heldout_patterns=("wrong_return",))) != build_key(CorpusBuildConfig())


def test_a_corpus_file_written_before_the_new_fields_still_reads(tmp_path):
    old = {k: v for k, v in task().items() if k not in ("error_context", "visible_tests")}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(old) + "\n")
    first, second = read_tasks(path)
    assert first == task() and list(first) == list(TASK_FIELDS)
    first["visible_tests"].append("x")
    assert second["visible_tests"] == []  # defaults are not shared between records
    path.write_text(json.dumps({k: v for k, v in old.items() if k != "tests"}) + "\n")
    with pytest.raises(TaskRecordError, match="missing \\['tests'\\]"):
        list(read_tasks(path))
