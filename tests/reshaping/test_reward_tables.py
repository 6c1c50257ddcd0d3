"""The README's reward and detector tables are the ones the presets give."""

import re
from pathlib import Path

import pytest

from streams.reshaping.config import COMPONENTS, config_from_dict, load_preset
from streams.reshaping.tables import END_MARKER, PRESET_COLUMNS, START_MARKER, render, replace_section
from streams.signals.hacks import HACK_FLAGS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_tables_match_the_presets():
    text = README.read_text()
    section = text[text.index(START_MARKER):text.index(END_MARKER) + len(END_MARKER)]
    assert section == render(), "README tables are stale: python -m streams.reshaping.tables --write README.md"


def test_every_component_and_flag_has_a_row_with_a_cell_per_preset():
    rows = [line for line in render().splitlines() if line.startswith("| `") or line.startswith("| any other")]
    names = [row.split("|")[1].strip().strip("`") for row in rows]
    assert names == [*COMPONENTS, *HACK_FLAGS, "any other flag"]
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)[1:-1]  # a pipe escaped inside a cell does not split it
        assert len(cells) == 2 + len(PRESET_COLUMNS) and all(c.strip() for c in cells), row


def test_cells_follow_the_preset_values():
    presets = {name: load_preset(name) for name in PRESET_COLUMNS}
    data = presets["full"].model_dump(mode="json")
    weights = {**data["weights"], "robust": 0.25, "end": {**data["weights"]["end"], "style": 0.4}}
    penalties = {**data["rewards"]["hack_penalties"], "dead_code": 2.5}
    changed = config_from_dict({**data, "weights": weights,
                                "rewards": {**data["rewards"], "hack_penalties": penalties}})
    lines = render({**presets, "full": changed}).splitlines()
    row = {line.split("|")[1].strip(): line.rsplit("|", 2)[1].strip() for line in lines if line.startswith("| `")}
    assert (row["`robust`"], row["`style`"], row["`dead_code`"]) == ("0.25", "0.1 → 0.4", "2.5")
    assert row["`test`"] == "1 (pass fraction)" and row["`except_pass`"] == "1"


def test_a_section_without_markers_is_refused():
    assert replace_section(f"a\n{START_MARKER}\nold\n{END_MARKER}\nb", "new") == "a\nnew\nb"
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers here", "new")
