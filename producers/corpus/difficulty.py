"""How hard a bug is to fix, in [0, 1].

    difficulty = min(1, base(pattern) + 0.4 * min(lines, 40) / 40)

``base`` is the pattern's ``base_difficulty`` (0.1 for a missing colon, which the parser
points at, up to 0.5 for a deleted guard, which must be re-invented); ``lines`` counts the
non-blank, non-comment lines of the reference code, since a bug hides better in a longer
function. Rounded to 3 decimals so the corpus file is stable.
"""

from __future__ import annotations

SIZE_WEIGHT = 0.4
SIZE_CAP_LINES = 40


def code_lines(code: str) -> int:
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def difficulty(base: float, reference_code: str) -> float:
    size = min(code_lines(reference_code), SIZE_CAP_LINES) / SIZE_CAP_LINES
    return round(min(1.0, base + SIZE_WEIGHT * size), 3)
