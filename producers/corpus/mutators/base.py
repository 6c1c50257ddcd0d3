"""What a mutator is: it lists the places in a function where its bug fits (sites), in a
fixed order, and turns one site into buggy source code.

Sites are cheap to list (a node and its replacement); the mutated source is rendered only
for the site a seeded RNG picks, because rendering every candidate of every function
would dominate the build time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
    PositionProvider,
    ScopeProvider,
    WhitespaceInclusivePositionProvider,
)


class MutationError(ValueError):
    """The source cannot be mutated (it does not parse, or a site does not fit it)."""


class ParsedSource:
    """A parsed function source with the libcst metadata mutators ask for, resolved once."""

    def __init__(self, code: str):
        try:
            module = cst.parse_module(code)
        except cst.ParserSyntaxError as err:
            raise MutationError(f"source does not parse: {err}") from err
        self.wrapper = MetadataWrapper(module)
        # The wrapper works on its own copy; sites must point into that copy.
        self.module = self.wrapper.module

    @property
    def code(self) -> str:
        return self.module.code

    @cached_property
    def positions(self):
        return self.wrapper.resolve(PositionProvider)

    @cached_property
    def inclusive_positions(self):
        return self.wrapper.resolve(WhitespaceInclusivePositionProvider)

    @cached_property
    def scopes(self):
        return self.wrapper.resolve(ScopeProvider)

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line


@dataclass(frozen=True)
class Site:
    """One place where a bug can go: ``target`` is swapped for ``replacement``."""

    line: int
    description: str
    target: cst.CSTNode
    replacement: cst.CSTNode

    def apply(self, source: ParsedSource) -> str:
        return source.module.deep_replace(self.target, self.replacement).code


@dataclass(frozen=True)
class TextEditSite:
    """A bug made on the text (for bugs that libcst cannot represent, like a lost colon):
    delete ``length`` characters at (``line``, ``column``), 1-based line, 0-based column."""

    line: int
    column: int
    length: int
    description: str

    def apply(self, source: ParsedSource) -> str:
        lines = source.code.splitlines(keepends=True)
        text = lines[self.line - 1]
        lines[self.line - 1] = text[: self.column] + text[self.column + self.length :]
        return "".join(lines)


class Mutator(ABC):
    """One bug pattern. Subclasses set ``name`` and ``base_difficulty`` and list sites."""

    name: ClassVar[str]
    base_difficulty: ClassVar[float]
    # False only for the syntax-error pattern: its mutants must *not* compile.
    keeps_valid_syntax: ClassVar[bool] = True

    @abstractmethod
    def sites(self, source: ParsedSource) -> list[Site | TextEditSite]:
        """All sites, in source order (deterministic for a given source)."""


MUTATORS: dict[str, Mutator] = {}


def register(cls: type[Mutator]) -> type[Mutator]:
    """Class decorator: make a mutator available by its pattern name."""
    if cls.name in MUTATORS:
        raise ValueError(f"bug pattern {cls.name!r} registered twice")
    MUTATORS[cls.name] = cls()
    return cls


class UnknownPatternError(KeyError):
    """A bug pattern name no mutator is registered under."""


def get_mutator(name: str) -> Mutator:
    try:
        return MUTATORS[name]
    except KeyError:
        raise UnknownPatternError(
            f"unknown bug pattern {name!r}; known: {sorted(MUTATORS)}"
        ) from None


class FunctionVisitor(cst.CSTVisitor):
    """A visitor that knows whether it is inside a function body: bugs go into functions,
    not into module-level setup code or class attributes."""

    def __init__(self, source: ParsedSource):
        super().__init__()
        self.source = source
        self.sites: list[Site | TextEditSite] = []
        self._function_depth = 0

    @property
    def in_function(self) -> bool:
        return self._function_depth > 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._function_depth -= 1

    def add(self, target: cst.CSTNode, replacement: cst.CSTNode, description: str,
            line_node: cst.CSTNode | None = None) -> None:
        line = self.source.line_of(line_node if line_node is not None else target)
        self.sites.append(Site(line, f"line {line}: {description}", target, replacement))

    def collect(self) -> list[Site | TextEditSite]:
        self.source.module.visit(self)
        return self.sites
