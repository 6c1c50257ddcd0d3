"""The README's reward and detector tables, rendered from the shipped presets.

``python -m streams.reshaping.tables`` prints them; ``--write README.md`` replaces the text
between the two markers there. A test keeps the README equal to what this renders, so the
tables cannot drift from the presets.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from streams.feedback.evaluate import RUNTIME_HACK_FLAGS
from streams.reshaping.config import COMPONENTS, ReshapingConfig, load_preset
from streams.signals.hacks import HACK_FLAGS

PRESET_COLUMNS = ("raw", "binary", "layered", "full")
START_MARKER = "<!-- reward tables: python -m streams.reshaping.tables --write README.md -->"
END_MARKER = "<!-- end of reward tables -->"

# what each component is, in the names of the config (streams/reshaping/rewards.py computes it)
FORMULAS = {
    "test": "the outcome, by `outcome.kind`: pass fraction f (mean or median of the repeats); layered tier "
            "(unparsable < load_error < crash_all < wrong < partial + (all_pass − partial)·f < all_pass; "
            "timeouts and memory kills are crashes); binary 1 iff every test passes. Under "
            "`robustness.combine` mean, min or vote, f is the evaluators' combined outcome",
    "precision": "exp(−λ·d), d the normalised tree edit distance to the buggy code, times R_test under "
                 "`precision_gate: r_test`",
    "style": "`style_clean`, `style_autofix`, `style_logical` or `style_unparsable` by the black/flake8 class",
    "hack": "−Σ penalty over the distinct hack flags (detector table below)",
    "progress": "`bonus` for a full fix of a bug pattern with `min_failures` failures in the window since "
                "its last fix",
    "robust": "f × mean of the checks that ran, f × `unchecked` when none ran; checks: 1 − mismatches/checked "
              "(random inputs against the reference), 1 or 0 (renamed variant passes as many tests)",
    "exec": "`exec_line_coverage` / tests_total (tests the judge passed); 0 under `exec_tracer_use` or with no "
            "test passed",
}
OUTCOME_NAMES = {"pass_fraction": "pass fraction", "layered": "layered", "binary": "binary"}
UNKNOWN_FLAG = "any other flag"


def _number(x: float) -> str:
    return f"{x:g}"


def _cell(text: str) -> str:
    """``text`` safe in a markdown table cell: pipes escaped, and outside code spans the
    underscores and stars that would start emphasis (``__file__``, ``os.exec*``)."""
    parts = text.replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = parts[i].replace("_", "\\_").replace("*", "\\*")
    return "`".join(parts)


def _scheduled(start: float, end: float) -> str:
    return _number(start) if start == end else f"{_number(start)} → {_number(end)}"


def _weight(cfg: ReshapingConfig, name: str) -> str:
    cell = _scheduled(cfg.weights.start()[name], cfg.weights.final()[name])
    if name == "test":
        outcome = OUTCOME_NAMES[cfg.outcome.kind]
        combined = "" if cfg.robustness.combine == "component" else f", {cfg.robustness.combine} of evaluators"
        cell += f" ({outcome}{combined})"
    return cell


def reward_table(presets: Mapping[str, ReshapingConfig]) -> str:
    """Every component, its formula, its weight per preset (start → end of a schedule)."""
    names = list(presets)
    lines = [f"| component | R_c | {' | '.join(f'w ({n})' for n in names)} |",
             "|---|---|" + "---|" * len(names)]
    for name in COMPONENTS:
        cells = [_weight(presets[p], name) for p in names]
        lines.append(f"| `{name}` | {_cell(FORMULAS[name])} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _cost(cfg: ReshapingConfig, flag: str) -> str:
    rc = cfg.rewards
    penalty = rc.unknown_hack_penalty if flag == UNKNOWN_FLAG else rc.hack_penalties.get(flag, rc.unknown_hack_penalty)
    return _scheduled(cfg.weights.start()["hack"] * penalty, cfg.weights.final()["hack"] * penalty)


def _detector(flag: str) -> str:
    if flag == UNKNOWN_FLAG:
        return "a flag without a penalty of its own (a detector added later): `unknown_hack_penalty`"
    runtime = [f"`{sandbox}`" for sandbox, hack in RUNTIME_HACK_FLAGS.items() if hack == flag]
    found = f"static: {HACK_FLAGS[flag]}"
    return found + (f"; at run time, the sandbox's {', '.join(runtime)}" if runtime else "")


def detector_table(presets: Mapping[str, ReshapingConfig]) -> str:
    """Every hack flag, what raises it, and what it costs a rollout per preset (w_hack × penalty)."""
    names = list(presets)
    lines = [f"| flag | raised by | {' | '.join(f'cost ({n})' for n in names)} |",
             "|---|---|" + "---|" * len(names)]
    for flag in [*HACK_FLAGS, UNKNOWN_FLAG]:
        label = flag if flag == UNKNOWN_FLAG else f"`{flag}`"
        cells = [_cost(presets[p], flag) for p in names]
        lines.append(f"| {label} | {_cell(_detector(flag))} | {' | '.join(cells)} |")
    return "\n".join(lines)


def render(presets: Mapping[str, ReshapingConfig] | None = None) -> str:
    """The README section between the markers, markers included."""
    presets = presets or {name: load_preset(name) for name in PRESET_COLUMNS}
    return "\n\n".join([START_MARKER, reward_table(presets), detector_table(presets), END_MARKER])


def replace_section(text: str, section: str) -> str:
    """``text`` with the part from the start marker to the end marker replaced by ``section``."""
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError("the reward table markers are missing or out of order")
    return text[:start] + section + text[end + len(END_MARKER):]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="a markdown file whose marked section is replaced")
    args = parser.parse_args(argv)
    section = render()
    if args.write is None:
        print(section)
        return
    args.write.write_text(replace_section(args.write.read_text(), section))


if __name__ == "__main__":
    main()
