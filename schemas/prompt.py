"""The repair prompt and the reading of a completion back into code.

One template, versioned: PROMPT_TEMPLATE_VERSION travels with every rollout, so a change
of wording is a new version and never silently mixes with old rollouts. (The visible test and
its error joined repair-v1 without a new version: no earlier prompt carried an error.)

The contract, both ways: the prompt shows the task's whole code (module-level imports
included) and asks for the corrected code. The candidate that is run is `candidate_code`:
the first fenced block cut down to its definitions (`extract_code`), plus those of the
task's module-level imports that the candidate uses and does not bind itself. A model
that rewrites only the function is not failed for leaving `from typing import List` out;
nothing but import statements is ever carried over from the task.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

PROMPT_TEMPLATE_VERSION = "repair-v1"

SYSTEM_MESSAGE = (
    "You repair buggy Python functions. Reply with the corrected code only, "
    "in a single ```python code block, keeping the function's name and signature."
)


def repair_messages(
    buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000, visible_tests: Sequence[str] = ()
) -> list[dict]:
    """The chat turns asking for a repair of `buggy_code`, plus, if given, the visible tests
    and what went wrong when they ran (`error_context`)."""
    code = normalise_newlines(buggy_code).strip("\n")
    user = f"This Python code has a bug. Fix it.\n\n```python\n{code}\n```"
    if visible_tests:
        tests = "\n".join(normalise_newlines(t).strip("\n") for t in visible_tests)
        user += f"\n\nThis test fails:\n```python\n{tests}\n```"
    if error_context:
        error = normalise_newlines(error_context).strip()
        if len(error) > max_error_chars:
            # The end of a traceback names the failing line and the error; keep that part.
            error = "..." + error[len(error) - max_error_chars :]
        said = "Running it gives" if visible_tests else "Running the tests printed"
        user += f"\n\n{said}:\n```\n{error}\n```"
    return [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": user}]


def task_messages(task: dict, include_error_context: bool = False, max_error_chars: int = 2000) -> list[dict]:
    """The chat turns for a Task record: its buggy code, and with `include_error_context` its
    visible tests and their error. The one rendering of a task, in training and evaluation
    alike. The visible tests are never among the scored (hidden) tests, so showing them or not
    leaves the score's tests the same."""
    if not include_error_context:
        return repair_messages(task["buggy_code"])
    return repair_messages(task["buggy_code"], task.get("error_context") or None, max_error_chars,
                           task.get("visible_tests") or ())


def render_task_prompt(tokenizer, task: dict, include_error_context: bool = False,
                       max_error_chars: int = 2000) -> list[int]:
    """The prompt token ids of a Task record (see `task_messages`)."""
    return _token_ids(tokenizer, task_messages(task, include_error_context, max_error_chars))


def render_prompt_text(
    tokenizer, buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000
) -> str:
    """The prompt as text, through the tokenizer's chat template, ready for the assistant turn."""
    messages = repair_messages(buggy_code, error_context, max_error_chars)
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def render_prompt(
    tokenizer, buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000
) -> list[int]:
    """The prompt token ids of `buggy_code` (and an error context, if given)."""
    return _token_ids(tokenizer, repair_messages(buggy_code, error_context, max_error_chars))


def _token_ids(tokenizer, messages: list[dict]) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    # the template already holds the special tokens, so none are added
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def completion_target(reference_code: str) -> str:
    """The completion a perfect policy writes for `reference_code` (used by the warm-up)."""
    return f"```python\n{normalise_newlines(reference_code).strip(chr(10))}\n```"


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# An opening fence (optionally ```python / ```py) and its body up to the closing fence or the end.
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL | re.IGNORECASE)

# Top-level statements that belong to the repaired code; calls, prints, asserts and
# `if __name__ == "__main__"` blocks that a model likes to append are dropped.
_KEPT_STATEMENTS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Assign,
    ast.AnnAssign,
)


def extract_code(completion: str) -> str:
    """The repaired code in a completion: the first fenced block (or the whole text), cut
    down to its imports, module constants, classes and functions.

    Code that does not parse is returned as the model wrote it (stripped): a syntax error is
    a legitimate outcome for the feedback stage to score, not something to hide here.
    Non-empty code ends with one newline, as a source file does (style checks count a
    missing one, W292).
    """
    code = _extract(completion)
    return code + "\n" if code else code


def _extract(completion: str) -> str:
    text = normalise_newlines(completion)
    match = _FENCE.search(text)
    code = match.group(1) if match else text
    code = code.strip("\n")
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code.strip()
    lines = code.split("\n")
    starts = [_first_line(node) for node in tree.body] + [len(lines) + 1]
    pieces = []
    for i, node in enumerate(tree.body):
        if not isinstance(node, _KEPT_STATEMENTS):
            continue
        # A kept statement keeps the blank lines and comments up to the next kept one.
        end = (
            starts[i + 1] - 1
            if i + 1 < len(tree.body) and isinstance(tree.body[i + 1], _KEPT_STATEMENTS)
            else node.end_lineno
        )
        pieces.append("\n".join(lines[starts[i] - 1 : end]))
    return "\n".join(pieces).strip() if pieces else code.strip()


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def candidate_code(completion: str, task_code: str) -> str:
    """The code to run for `completion` as a repair of `task_code` (see the module docstring)."""
    return carry_task_imports(extract_code(completion), task_code)


def carry_task_imports(candidate: str, task_code: str) -> str:
    """`candidate` with the task's module-level imports it needs and lacks put in front.

    An import is carried (only the names of it that are needed) when the candidate reads a
    name it binds and binds that name nowhere at module level itself. Carried imports go
    after the candidate's docstring and `__future__` imports; everything the candidate
    defines comes later, so its own bindings still win. A candidate that does not parse is
    returned unchanged: its syntax error is the outcome to score.
    """
    try:
        tree = ast.parse(candidate)
    except SyntaxError:
        return candidate
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    missing = used - _module_bindings(tree)
    carried = []
    for statement in task_imports(task_code):
        names = [alias for alias in statement.names if _bound_name(alias) in missing]
        if names:
            carried.append(ast.unparse(_with_names(statement, names)))
            missing -= {_bound_name(alias) for alias in names}
    if not carried:
        return candidate
    lines = candidate.split("\n")
    at = _after_preamble(tree)
    following = [node for node in tree.body if _first_line(node) > at]
    if following and isinstance(following[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # two blank lines before a top-level definition, as the style check (E302) expects
        blank = next((i for i, line in enumerate(lines[at:]) if line.strip()), 0)
        carried += [""] * max(0, 2 - blank)
    return "\n".join(lines[:at] + carried + lines[at:])


def task_imports(task_code: str) -> list[ast.Import | ast.ImportFrom]:
    """The module-level import statements of `task_code`. Buggy code may not parse (a syntax
    bug); then each unindented `import`/`from` line is read on its own."""
    try:
        body = ast.parse(task_code).body
    except SyntaxError:
        body = []
        for line in normalise_newlines(task_code).split("\n"):
            if line.startswith(("import ", "from ")):
                try:
                    body += ast.parse(line).body
                except SyntaxError:
                    continue
    return [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom)) and not _is_future(s)]


def task_import_names(task_code: str) -> set[str]:
    """The names the task's module-level imports bind."""
    return {_bound_name(alias) for statement in task_imports(task_code) for alias in statement.names}


def _bound_name(alias: ast.alias) -> str:
    # `import os.path` binds `os`; `from x import *` binds no name we could check for
    return alias.asname or alias.name.split(".")[0]


def _with_names(statement: ast.Import | ast.ImportFrom, names: list[ast.alias]) -> ast.stmt:
    if isinstance(statement, ast.Import):
        return ast.Import(names=names)
    return ast.ImportFrom(module=statement.module, names=names, level=statement.level)


def _module_bindings(tree: ast.Module) -> set[str]:
    """Names the candidate binds at module level (imports, definitions, assignments)."""
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {_bound_name(alias) for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _after_preamble(tree: ast.Module) -> int:
    """The line count of the candidate's docstring and `__future__` imports (code must follow them)."""
    end = 0
    for i, node in enumerate(tree.body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        if not (docstring or _is_future(node)):
            break
        end = node.end_lineno
    return end
