"""The repair prompt and the reading of a completion back into code.

One template, versioned: PROMPT_TEMPLATE_VERSION travels with every rollout, so a change
of wording is a new version and never silently mixes with old rollouts.
"""

from __future__ import annotations

import ast
import re

PROMPT_TEMPLATE_VERSION = "repair-v1"

SYSTEM_MESSAGE = (
    "You repair buggy Python functions. Reply with the corrected code only, "
    "in a single ```python code block, keeping the function's name and signature."
)


def repair_messages(buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000) -> list[dict]:
    """The chat turns asking for a repair of `buggy_code` (plus the failing tests' output, if given)."""
    code = normalise_newlines(buggy_code).strip("\n")
    user = f"This Python code has a bug. Fix it.\n\n```python\n{code}\n```"
    if error_context:
        error = normalise_newlines(error_context).strip()
        if len(error) > max_error_chars:
            # The end of a traceback names the failing line and the error; keep that part.
            error = "..." + error[len(error) - max_error_chars :]
        user += f"\n\nRunning the tests printed:\n```\n{error}\n```"
    return [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": user}]


def render_prompt_text(
    tokenizer, buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000
) -> str:
    """The prompt as text, through the tokenizer's chat template, ready for the assistant turn."""
    messages = repair_messages(buggy_code, error_context, max_error_chars)
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def render_prompt(
    tokenizer, buggy_code: str, error_context: str | None = None, max_error_chars: int = 2000
) -> list[int]:
    """The prompt token ids (the template already holds the special tokens, so none are added)."""
    text = render_prompt_text(tokenizer, buggy_code, error_context, max_error_chars)
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
