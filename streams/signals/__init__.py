"""Raw feedback signals: pure functions of (buggy code, candidate code, test outcomes).

Nothing here runs candidate code; the sandbox does, and these functions read its
outcomes and the code itself.

The names below load on first use (PEP 562): the configs that hold a `SignalConfig` (the
run config, the stream settings) import `streams.signals.config` in processes that never
compute a signal, and the signal modules bring libcst, black and flake8 (about two seconds
of imports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# exported name -> the module of this package that defines it
_EXPORTS = {
    "random_inputs": "adversarial",
    "RenamedProgram": "renaming", "rename_entry_point": "renaming", "rename_program": "renaming",
    "reference_agreement": "robustness", "rename_outcome": "robustness",
    "BUG_PATTERNS": "bug_patterns", "NO_CHANGE": "bug_patterns", "classify_fix": "bug_patterns",
    "SignalConfig": "config",
    "SignalInputError": "errors",
    "executable_lines": "exec_path", "line_coverage": "exec_path", "uses_tracer": "exec_path",
    "HACK_FLAGS": "hacks", "HackReport": "hacks", "cyclomatic_complexity": "hacks", "detect_hacks": "hacks",
    "detect_hardcoded": "hacks",
    "STYLE_CLASSES": "style", "StyleReport": "style", "check_style": "style",
    "TreeDistance": "tree_distance", "tree_edit_distance": "tree_distance",
    "VisibleCall": "visible_tests", "parse_visible_tests": "visible_tests",
}
__all__ = [
    "BUG_PATTERNS", "HACK_FLAGS", "HackReport", "NO_CHANGE", "STYLE_CLASSES", "SignalConfig",
    "SignalInputError", "StyleReport", "TreeDistance", "VisibleCall", "check_style", "classify_fix",
    "cyclomatic_complexity", "detect_hacks", "detect_hardcoded", "parse_visible_tests", "random_inputs",
    "rename_entry_point", "tree_edit_distance", "executable_lines", "line_coverage", "uses_tracer",
    "RenamedProgram", "reference_agreement", "rename_outcome", "rename_program",
]

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from streams.signals.adversarial import random_inputs
    from streams.signals.renaming import RenamedProgram, rename_entry_point, rename_program
    from streams.signals.robustness import reference_agreement, rename_outcome
    from streams.signals.bug_patterns import BUG_PATTERNS, NO_CHANGE, classify_fix
    from streams.signals.config import SignalConfig
    from streams.signals.errors import SignalInputError
    from streams.signals.exec_path import executable_lines, line_coverage, uses_tracer
    from streams.signals.hacks import HACK_FLAGS, HackReport, cyclomatic_complexity, detect_hacks, detect_hardcoded
    from streams.signals.style import STYLE_CLASSES, StyleReport, check_style
    from streams.signals.tree_distance import TreeDistance, tree_edit_distance
    from streams.signals.visible_tests import VisibleCall, parse_visible_tests


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value
