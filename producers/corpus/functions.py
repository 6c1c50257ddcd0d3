"""The unit the corpus is made of: a correct function with the tests that check it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceFunction:
    """A correct reference function and its hidden tests, before any bug is injected.

    Tests run as: ``test_imports``, then ``reference_code`` (or a buggy version of it),
    then ``test_setup_code``, then each assert in ``tests``.
    """

    function_id: str  # e.g. "mbpp-0012"; splits are made on this id
    source: str  # "mbpp" | "humaneval"
    entry_point: str
    reference_code: str
    tests: tuple[str, ...]
    description: str = ""
    test_setup_code: str = ""
    test_imports: tuple[str, ...] = field(default_factory=tuple)


class CorpusDataError(RuntimeError):
    """A corpus data file is missing or not in the expected shape."""
