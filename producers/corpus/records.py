"""Task records (the payload of the `tasks` topic) and their JSONL files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from schemas.codec import SCHEMA_DIR

from producers.corpus.functions import SourceFunction

# The envelope is added when a record is published as an event.
ENVELOPE_FIELDS = ("event_id", "schema_version", "created_at_ms")
_SCHEMA_FIELDS = [f for f in json.loads((SCHEMA_DIR / "task.avsc").read_text())["fields"]
                  if f["name"] not in ENVELOPE_FIELDS]
TASK_FIELDS: tuple[str, ...] = tuple(f["name"] for f in _SCHEMA_FIELDS)
# A field the schema gained later has a default; a file written before it reads with that.
TASK_DEFAULTS: dict[str, object] = {f["name"]: f["default"] for f in _SCHEMA_FIELDS if "default" in f}


class TaskRecordError(ValueError):
    """A task record without exactly the fields of schemas/task.avsc (less the envelope)."""


def task_id(function_id: str, pattern: str, index: int) -> str:
    return f"{function_id}-{pattern}-{index}"


def make_task(function: SourceFunction, *, split: str, pattern: str, index: int,
              buggy_code: str, difficulty: float, seed: int, tests: Sequence[str] | None = None,
              visible_tests: Sequence[str] = (), error_context: str = "") -> dict:
    """The Task record of one bug. ``tests`` are the hidden (scored) tests, by default all of
    the function's; ``visible_tests`` are shown in the prompt with ``error_context``."""
    record = {
        "task_id": task_id(function.function_id, pattern, index),
        "function_id": function.function_id,
        "source": function.source,
        "split": split,
        "description": function.description,
        "entry_point": function.entry_point,
        "reference_code": function.reference_code,
        "buggy_code": buggy_code,
        "test_setup_code": function.test_setup_code,
        "test_imports": list(function.test_imports),
        "tests": list(function.tests if tests is None else tests),
        "bug_pattern": pattern,
        "difficulty": difficulty,
        "seed": seed,
        "error_context": error_context,
        "visible_tests": list(visible_tests),
    }
    check_task(record)
    return {name: record[name] for name in TASK_FIELDS}  # schema field order


def check_task(record: dict) -> None:
    missing = set(TASK_FIELDS) - set(record)
    extra = set(record) - set(TASK_FIELDS)
    if missing or extra:
        raise TaskRecordError(f"task record fields differ from task.avsc: "
                              f"missing {sorted(missing)}, unexpected {sorted(extra)}")


def write_tasks(path: str | Path, tasks: Iterable[dict]) -> int:
    """Write one JSON object per line; returns the count. Same tasks -> same bytes."""
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        for record in tasks:
            check_task(record)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


def with_defaults(record: dict) -> dict:
    """``record`` with the schema's default for each defaulted field it lacks, in schema field
    order (a corpus file written before the schema gained a field still reads)."""
    missing = [name for name in TASK_DEFAULTS if name not in record]
    if not missing:
        return record
    filled = {**record, **{name: copy.deepcopy(TASK_DEFAULTS[name]) for name in missing}}
    order = {name: i for i, name in enumerate(TASK_FIELDS)}
    return dict(sorted(filled.items(), key=lambda item: order.get(item[0], len(order))))


def read_tasks(path: str | Path) -> Iterator[dict]:
    """The task records of a JSONL file, missing fields with defaults filled (``with_defaults``)."""
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise TaskRecordError(f"{path}:{number}: not JSON: {err}") from err
            record = with_defaults(record)
            check_task(record)
            yield record
