"""The bug-set file `reshaper eval` reads: JSON Lines, one task per line.

Required per line:
  task_id      str   unique in the file
  buggy_code   str   the code the policy is asked to repair
  entry_point  str   the function the tests call
  and one of
  tests        list[str]  assert statements (MBPP style), e.g. "assert f(1) == 2"
  test_code    str        a HumanEval-style `def check(candidate): ...`; run as check(<entry_point>)
Optional:
  bug_pattern     str   injected bug pattern (default "unknown"); metrics are also given per pattern
  reference_code  str   the correct code (default ""), shown nowhere to the policy
  test_setup_code str   code run after the candidate, before the tests (default "")
  test_imports    list[str]  import lines run before the tests (default [])
  difficulty      float in [0, 1] (default 0.5)
  source          str   where the task comes from (default "custom")
  function_id     str   the function the bug was injected into (default: the task_id); `--limit`
                        spreads a short set over functions by it
  visible_tests   list[str]  tests shown in the prompt with `--error-context` (default []); never
                        scored: they are not among `tests`
  error_context   str   what went wrong on the visible tests (default "")
Full `Task` records of the corpus (schemas/task.avsc) are accepted as they are; extra
fields are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

EVAL_FIELDS = ("task_id", "function_id", "source", "entry_point", "buggy_code", "reference_code",
               "test_setup_code", "test_imports", "tests", "bug_pattern", "difficulty", "visible_tests",
               "error_context")


class EvalTaskError(ValueError):
    """A bug-set line that is not a usable task; the message names the line and the field."""


def _string(record: dict, name: str, where: str, default: str | None = None) -> str:
    value = record.get(name, default)
    if not isinstance(value, str) or (default is None and not value):
        raise EvalTaskError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
    return value


def normalise_task(record: dict, where: str = "task") -> dict:
    """The task in the evaluator's shape (the EVAL_FIELDS), or EvalTaskError."""
    if not isinstance(record, dict):
        raise EvalTaskError(f"{where}: expected a JSON object, got {type(record).__name__}")
    entry = _string(record, "entry_point", where)
    setup = _string(record, "test_setup_code", where, "")
    tests = record.get("tests")
    if tests is None and "test_code" in record:
        # The check function is defined by the setup code, so the one test is a plain call.
        setup = (setup + "\n" + _string(record, "test_code", where)).strip("\n")
        tests = [f"check({entry})"]
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
        raise EvalTaskError(f"{where}: needs 'tests' (a non-empty list of assert strings) or 'test_code'")
    imports = record.get("test_imports", [])
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise EvalTaskError(f"{where}: field 'test_imports' must be a list of strings")
    visible = record.get("visible_tests", [])
    if not isinstance(visible, list) or not all(isinstance(t, str) for t in visible):
        raise EvalTaskError(f"{where}: field 'visible_tests' must be a list of strings")
    difficulty = record.get("difficulty", 0.5)
    if isinstance(difficulty, bool) or not isinstance(difficulty, (int, float)) or not 0 <= difficulty <= 1:
        raise EvalTaskError(f"{where}: field 'difficulty' must be a number in [0, 1], got {difficulty!r}")
    task_id = _string(record, "task_id", where)
    return {
        "task_id": task_id,
        "function_id": _string(record, "function_id", where, task_id),
        "source": _string(record, "source", where, "custom"),
        "entry_point": entry,
        "buggy_code": _string(record, "buggy_code", where),
        "reference_code": _string(record, "reference_code", where, ""),
        "test_setup_code": setup,
        "test_imports": list(imports),
        "tests": list(tests),
        "bug_pattern": _string(record, "bug_pattern", where, "unknown") or "unknown",
        "difficulty": float(difficulty),
        "visible_tests": list(visible),
        "error_context": _string(record, "error_context", where, ""),
    }


def read_eval_tasks(path: str | Path) -> list[dict]:
    """Every task of a bug-set file, normalised; duplicate task ids are refused."""
    path = Path(path)
    tasks, seen = [], set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalTaskError(f"{where}: not JSON ({exc.msg})") from exc
        task = normalise_task(record, where)
        if task["task_id"] in seen:
            raise EvalTaskError(f"{where}: task_id {task['task_id']!r} appears twice")
        seen.add(task["task_id"])
        tasks.append(task)
    if not tasks:
        raise EvalTaskError(f"{path}: no tasks")
    return tasks


def spread_over_functions(tasks: list[dict], limit: int | None = None) -> list[dict]:
    """At most `limit` of `tasks`, spread over functions: one bug of every function (by
    function id), then a second of every function, and so on. Which bug of a function comes
    first is fixed by a hash of its task id, so patterns vary; the order depends on nothing
    but the tasks, so a limited set is the same for every arm and seed."""
    from producers.corpus.split import unit_hash

    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    by_function: dict[str, list[dict]] = {}
    for t in sorted(tasks, key=lambda t: (unit_hash(t["task_id"]), t["task_id"])):
        by_function.setdefault(t.get("function_id") or t["task_id"], []).append(t)
    spread = sorted(((rank, fid, t) for fid, ts in by_function.items() for rank, t in enumerate(ts)),
                    key=lambda item: item[:2])
    return [t for _, _, t in spread[:limit]]


def write_eval_tasks(path: str | Path, tasks: list[dict]) -> Path:
    """Write `tasks` in the documented format (only the EVAL_FIELDS)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for task in tasks:
            fh.write(json.dumps({name: task[name] for name in EVAL_FIELDS}) + "\n")
    return path
