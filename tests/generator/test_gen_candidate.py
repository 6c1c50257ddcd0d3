"""candidate_code: the task's module-level imports a candidate needs and lacks, and nothing else."""

import ast

from schemas.prompt import candidate_code, task_import_names

TASK = (
    "import math\nfrom typing import List, Tuple\nimport re as regex\n\nLIMIT = 10\n\n\n"
    "def f(xs: List[int]) -> int:\n    return math.floor(sum(xs)) - 1\n"
)


def fenced(code: str) -> str:
    return f"Here is the fix:\n```python\n{code}```\n"


def test_missing_imports_are_carried_only_for_used_names():
    code = candidate_code(fenced("def f(xs: List[int]) -> int:\n    return math.floor(sum(xs))\n"), TASK)
    assert code == ("import math\nfrom typing import List\n\n\n"
                    "def f(xs: List[int]) -> int:\n    return math.floor(sum(xs))\n")


def test_nothing_but_imports_is_carried():
    code = candidate_code(fenced("def f(xs):\n    return min(LIMIT, regex.sub('a', 'b', xs))\n"), TASK)
    statements = ast.parse(code).body
    assert [type(s).__name__ for s in statements] == ["Import", "FunctionDef"]
    assert "LIMIT =" not in code and ast.unparse(statements[0]) == "import re as regex"


def test_candidate_own_import_is_kept_and_not_duplicated():
    own = "from math import floor\n\n\ndef f(xs):\n    return floor(sum(xs))\n"
    assert candidate_code(fenced(own), TASK) == own
    own_math = "import math as math\n\n\ndef f(xs):\n    return math.floor(sum(xs))\n"
    assert candidate_code(fenced(own_math), TASK) == own_math


def test_candidate_binding_wins_over_task_import():
    code = candidate_code(fenced("List = list\n\n\ndef f(xs: List) -> int:\n    return len(xs)\n"), TASK)
    assert "typing" not in code


def test_future_import_and_unparsable_candidates():
    code = candidate_code(fenced("from __future__ import annotations\ndef f(xs: List[int]):\n    return xs\n"), TASK)
    assert code.startswith("from __future__ import annotations\nfrom typing import List\n")
    compile(code, "<candidate>", "exec")
    broken = "def f(xs: List[int]:\n    return xs\n"
    assert candidate_code(fenced(broken), TASK) == broken


def test_imports_of_a_task_that_does_not_parse():
    task = "import heapq\n\ndef f(xs)\n    return heapq.nsmallest(2, xs)\n"
    assert task_import_names(task) == {"heapq"}
    assert candidate_code(fenced("def f(xs):\n    return heapq.nsmallest(2, xs)\n"), task).startswith("import heapq\n")


def test_task_without_imports_leaves_candidate_alone():
    code = "def f(xs):\n    return math.floor(xs)\n"
    assert candidate_code(fenced(code), "def f(xs):\n    return xs\n") == code
