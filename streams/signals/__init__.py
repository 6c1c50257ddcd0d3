"""Raw feedback signals: pure functions of (buggy code, candidate code, test outcomes).

Nothing here runs candidate code; the sandbox does, and these functions read its
outcomes and the code itself.
"""

from streams.signals.adversarial import random_inputs
from streams.signals.bug_patterns import BUG_PATTERNS, NO_CHANGE, classify_fix
from streams.signals.config import SignalConfig
from streams.signals.errors import SignalInputError
from streams.signals.hacks import (
    HACK_FLAGS,
    HackReport,
    cyclomatic_complexity,
    detect_hacks,
    detect_hardcoded,
)
from streams.signals.renaming import RenamedProgram, rename_entry_point, rename_program
from streams.signals.robustness import EvaluatorVerdicts, evaluator_verdicts, robustness_score
from streams.signals.style import STYLE_CLASSES, StyleReport, check_style
from streams.signals.tree_distance import TreeDistance, tree_edit_distance
from streams.signals.visible_tests import VisibleCall, parse_visible_tests

__all__ = [
    "BUG_PATTERNS",
    "HACK_FLAGS",
    "NO_CHANGE",
    "STYLE_CLASSES",
    "EvaluatorVerdicts",
    "HackReport",
    "RenamedProgram",
    "SignalConfig",
    "SignalInputError",
    "StyleReport",
    "TreeDistance",
    "VisibleCall",
    "check_style",
    "classify_fix",
    "cyclomatic_complexity",
    "detect_hacks",
    "detect_hardcoded",
    "evaluator_verdicts",
    "parse_visible_tests",
    "random_inputs",
    "rename_entry_point",
    "rename_program",
    "robustness_score",
    "tree_edit_distance",
]
