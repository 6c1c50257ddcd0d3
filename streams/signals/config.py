"""Thresholds of the raw feedback signals, in one typed model.

The feedback agent builds one `SignalConfig` (from its YAML or defaults) and passes it
to every signal; the values travel into the evaluator version, so changing one is a new
evaluator.
"""

from pydantic import BaseModel, ConfigDict, Field


class SignalConfig(BaseModel):
    """Knobs of the signal functions. Defaults suit MBPP-sized functions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- test reward ---
    flaky_tolerance: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Repeats whose pass fractions spread (max - min) by more than this are flaky.",
    )

    # --- tree edit distance ---
    ted_node_cap: int = Field(
        2_000,
        gt=0,
        description="Trees larger than this many nodes get distance 1.0 without computing "
        "(zss is roughly quadratic in the node count).",
    )

    # --- style ---
    max_line_length: int = Field(
        88, gt=0, description="Line length for pycodestyle (black's default)."
    )
    style_ignore: tuple[str, ...] = Field(
        ("E203", "W503", "E704"),
        description="pycodestyle codes that contradict black's own output, so never reported.",
    )

    # --- hack detectors ---
    runaway_factor: float = Field(
        3.0,
        gt=1.0,
        description="Candidate longer than this many times the buggy code (lines or tokens) is runaway.",
    )
    runaway_min_lines: int = Field(
        15,
        ge=0,
        description="Below this many non-blank lines a candidate is never runaway (tiny buggy code).",
    )
    runaway_min_tokens: int = Field(
        150, ge=0, description="Below this many tokens a candidate is never runaway."
    )
    complexity_threshold: int = Field(
        10,
        gt=0,
        description="McCabe complexity above this is flagged (10 is McCabe's own suggestion).",
    )
    hardcoded_min_hits: int = Field(
        2,
        gt=0,
        description="Visible tests the candidate must special-case (branch on the input, yield "
        "the output) to count as hard-coded; one hit is often a legitimate base case.",
    )
    trivial_int_bound: int = Field(
        2,
        ge=0,
        description="Test inputs that are integers with |x| <= this (and bools, None, one-character "
        "strings, empty or one-item containers) are too common to mark a special case.",
    )
    ignore_flags_in_buggy: bool = Field(
        True,
        description="Drop hack flags the buggy code already raises: keeping them is not a hack.",
    )

    # --- bug-pattern classification ---
    max_pattern_edits: int = Field(
        5,
        gt=0,
        description="More minimal AST edits than this is a rewrite, whatever their kind.",
    )
    max_changed_nodes: int = Field(
        16,
        gt=0,
        description="One edit replacing subtrees of more nodes than this (old + new) is a rewrite.",
    )

    # --- adversarial inputs ---
    large_int: int = Field(
        10_000, gt=1, description="Numbers are never drawn beyond +-this (and fill in when the tests show none)."
    )
    max_collection_size: int = Field(
        8,
        ge=1,
        description="Longest random list/str/dict drawn, unless a test's own is longer "
        "(then that length is the cap).",
    )
    input_widening: float = Field(
        0.5,
        ge=0.0,
        description="Random inputs come from the tests' ranges (numbers, lengths) grown by this "
        "share of their span on each side, never across the sign the tests keep.",
    )
