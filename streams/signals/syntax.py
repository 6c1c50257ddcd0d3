"""Parsing helpers shared by the AST-based signals."""

import ast
import re

import libcst as cst


def normalise_newlines(code: str) -> str:
    """MBPP code uses CRLF; every signal sees LF so line counts and tokens agree."""
    return code.replace("\r\n", "\n").replace("\r", "\n")


def parse_or_none(code: str) -> ast.Module | None:
    """The module's syntax tree, or None when the code does not parse."""
    try:
        return ast.parse(normalise_newlines(code))
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None


def strip_docstrings(tree: ast.AST) -> ast.AST:
    """Drop docstrings in place: rewording one is not an edit of the program."""
    for node in ast.walk(tree):
        if isinstance(
            node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                # A function must keep a body; `pass` stands in for a lone docstring.
                node.body = body[1:] or [ast.Pass()]
    return tree


def _expand_leading_tabs(code: str) -> str:
    return re.sub(
        r"^[ \t]+", lambda m: m.group().expandtabs(8), code, flags=re.MULTILINE
    )


def parse_cst(code: str) -> cst.Module | None:
    """The libcst tree of the code, or None when it does not parse.

    libcst rejects indentation that mixes tabs and spaces ambiguously, which Python
    accepts (a tab runs to the next multiple of 8 columns; a few MBPP solutions do
    this). The retry expands leading tabs that way, so the program stays the same.
    """
    for source in (code, _expand_leading_tabs(code)):
        try:
            return cst.parse_module(source)
        except cst.ParserSyntaxError:
            continue
    return None
