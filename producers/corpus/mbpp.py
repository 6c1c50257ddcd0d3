"""MBPP problems (Austin et al. 2021) as source functions.

The data files and their quirks are described in ``<data dir>/mbpp/README.md``.
"""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

from producers.corpus.functions import CorpusDataError, SourceFunction
from producers.corpus.paths import data_dir

# The data README ("Verification of the reference solutions") lists these three as failing
# their own tests: 341 and 642 expect a set iteration order CPython does not produce, 596
# expects `sys.getsizeof` values of another Python version.
BROKEN_REFERENCES = frozenset({341, 596, 642})
MBPP_SIZE = 974


def mbpp_function_id(task_id: int) -> str:
    return f"mbpp-{task_id:04d}"


def _normalise_newlines(text: str) -> str:
    # `code` (and `test_setup_code`) use CRLF line endings in the data file.
    return text.replace("\r\n", "\n")


def find_entry_point(code: str, test: str) -> str:
    """The function (or class) of ``code`` that the test calls first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old MBPP code has invalid escapes like "\\d"
        tree = ast.parse(code)
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    for node in ast.walk(ast.parse(test)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defined:
            return node.func.id
    raise CorpusDataError(f"no function of the reference is called by the test {test!r}")


def problem_to_function(problem: dict) -> SourceFunction:
    code = _normalise_newlines(problem["code"]).rstrip() + "\n"
    tests = tuple(_normalise_newlines(t) for t in problem["test_list"])
    # challenge_test_list is left out: the data README reports it was never run against
    # the references.
    return SourceFunction(
        function_id=mbpp_function_id(problem["task_id"]),
        source="mbpp",
        entry_point=find_entry_point(code, tests[0]),
        reference_code=code,
        tests=tests,
        description=problem["text"],
        test_setup_code=_normalise_newlines(problem["test_setup_code"]),
    )


def mbpp_path(root: Path | None = None) -> Path:
    path = (root or data_dir()) / "mbpp" / "mbpp.jsonl"
    if not path.is_file():
        raise CorpusDataError(f"MBPP data file not found: {path}")
    return path


def load_mbpp(root: Path | None = None) -> list[SourceFunction]:
    """All MBPP problems with a reference that passes its tests, in task_id order."""
    with mbpp_path(root).open(encoding="utf-8") as lines:
        problems = [json.loads(line) for line in lines if line.strip()]
    problems.sort(key=lambda p: p["task_id"])
    return [problem_to_function(p) for p in problems if p["task_id"] not in BROKEN_REFERENCES]
