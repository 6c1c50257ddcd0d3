"""Bug mutators, one module per bug pattern, registered by name in ``MUTATORS``."""

from producers.corpus.mutators.base import (
    MUTATORS,
    Mutator,
    MutationError,
    ParsedSource,
    Site,
    TextEditSite,
    UnknownPatternError,
    get_mutator,
)

# Importing a mutator module registers it; the order here is the order of ALL_PATTERNS.
from producers.corpus.mutators import (  # noqa: E402,F401  (imported for registration)
    indentation,
    operator_swap,
    variable_rename,
    boundary_check_deleted,
    argument_swap,
    off_by_one,
    wrong_constant,
    negated_condition,
    wrong_return,
    missing_colon,
)

ALL_PATTERNS: tuple[str, ...] = tuple(MUTATORS)
# The six patterns of the method this project implements; the rest are extra.
METHOD_PATTERNS: tuple[str, ...] = (
    "indentation_removed",
    "indentation_misplaced",
    "operator_swap",
    "variable_rename",
    "boundary_check_deleted",
    "argument_swap",
)

__all__ = [
    "ALL_PATTERNS", "METHOD_PATTERNS", "MUTATORS", "Mutator", "MutationError", "ParsedSource",
    "Site", "TextEditSite", "UnknownPatternError", "get_mutator",
]
