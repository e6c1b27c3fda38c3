"""`report/model_doc.py`: the generated sections of docs/model.md, so the constants it documents
are the ones in use: `render` rewrites every block between `<!-- BEGIN GENERATED: name -->` and
`<!-- END GENERATED: name -->` with its section's current text.

The whole document is regenerated and compared in the slow lane (its anchors section
cross-validates the fit, ~17 s); the fast lane checks `render` on a text of its own, the blocks
whose sections are quick, and the tables' shapes (the anchors table, as docs/model.md has it,
flags every constant with no more figures than unknowns as exactly determined). That the
shipped fit those sections print is a fresh fit's is `tests/accuracy/test_ship_fit.py`'s.
"""

from __future__ import annotations

import re

import pytest

from deepep_calc.catalog.constants import load_constants
from deepep_calc.catalog.transports import load_transports
from deepep_calc.report import model_doc
from paths import REPO

DOCS = REPO / "docs"
MODEL_MD = DOCS / "model.md"


@pytest.mark.slow
def test_model_doc_generated_sections_are_current() -> None:
    from deepep_calc.report.model_doc import render

    text = (DOCS / "model.md").read_text(encoding="utf-8")
    assert "<!-- BEGIN GENERATED: validation -->" in text
    assert render(text) == text, "docs/model.md drifted: python -m deepep_calc.report.model_doc docs/model.md"


# render, on a text of its own -------------------------------------------------------------------

TEXT = """intro
<!-- BEGIN GENERATED: a -->
stale a
<!-- END GENERATED: a -->
between
<!-- BEGIN GENERATED: b -->
<!-- END GENERATED: b -->
<!-- BEGIN GENERATED: a -->
mismatched
<!-- END GENERATED: b -->
outro
"""


def test_render_rewrites_each_block_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks a and b take their sections' text; a BEGIN of one name closed by the END of
    another is no block and stays as it is; text outside blocks is kept."""
    monkeypatch.setattr(model_doc, "SECTIONS", {"a": lambda: "fresh a", "b": lambda: "| b |\n| 2 |"})
    out = model_doc.render(TEXT)
    assert out == (
        "intro\n<!-- BEGIN GENERATED: a -->\nfresh a\n<!-- END GENERATED: a -->\nbetween\n"
        "<!-- BEGIN GENERATED: b -->\n| b |\n| 2 |\n<!-- END GENERATED: b -->\n"
        "<!-- BEGIN GENERATED: a -->\nmismatched\n<!-- END GENERATED: b -->\noutro\n"
    )
    assert model_doc.render(out) == out  # a second pass changes nothing


def test_a_block_naming_no_section_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_doc, "SECTIONS", {})
    with pytest.raises(KeyError, match="a"):
        model_doc.render(TEXT)


def test_every_block_of_the_document_has_a_section_and_every_section_a_block() -> None:
    names = re.findall(r"<!-- BEGIN GENERATED: ([\w-]+) -->", MODEL_MD.read_text(encoding="utf-8"))
    assert sorted(names) == sorted(model_doc.SECTIONS)


QUICK = ("constants", "transports", "hardware", "engine-fits")


@pytest.mark.parametrize("name", QUICK)
def test_the_quick_sections_of_the_document_are_current(name: str) -> None:
    """The sections that need no cross-validation, block by block (the slow test does them all)."""
    text = MODEL_MD.read_text(encoding="utf-8")
    block = re.search(rf"<!-- BEGIN GENERATED: {name} -->\n(.*?)\n<!-- END GENERATED: {name} -->", text, re.S)
    assert block is not None
    assert block.group(1) == model_doc.SECTIONS[name](), (
        "docs/model.md drifted: python -m deepep_calc.report.model_doc"
    )


# the tables' shapes ----------------------------------------------------------------------------


def rows_of(table: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ")
    ]


def test_the_constants_table_has_a_row_per_constant() -> None:
    rows = rows_of(model_doc.constants_table())
    assert rows[0] == ["constant", "value", "± (sensitivity)", "unit", "tag", "source"]
    assert [r[0] for r in rows[1:]] == [f"`{name}`" for name in load_constants()]


def test_the_transports_table_has_a_row_per_transport_and_nvlink_leaves_no_node() -> None:
    rows = {r[0]: r for r in rows_of(model_doc.transports_table())[1:]}
    assert list(rows) == [f"`{name}`" for name in load_transports()]
    nvlink = rows["`nvlink`"]
    assert nvlink[7] == "—" and nvlink[9] == "—"  # no leaving latency, no signal ratio on NVLink
    assert all(len(r) == 10 for r in rows.values())


def test_the_hardware_and_engine_tables_tag_every_constant() -> None:
    tags = {"measured", "derived", "assumed"}
    hardware = rows_of(model_doc.hardware_table())
    assert hardware[0][3] == "tag" and all(r[3] in tags and r[4] for r in hardware[1:])
    engines = rows_of(model_doc.engine_fits_table())
    assert engines[0][-1] == "tags" and all(set(r[-1].split(", ")) <= tags for r in engines[1:])
    sources = [line for line in model_doc.engine_fits_table().splitlines() if line.startswith("- ")]
    assert len(sources) == 5 * (len(engines) - 1)  # five constants an engine mode, each with its source


@pytest.mark.parametrize(
    ("figures", "free", "note"),
    [(2, 2, "exactly determined: in sample it is 0 by construction; read the held-out miss"), (3, 2, "")],
)
def test_an_anchor_line_says_when_a_fit_is_exactly_determined(figures: int, free: int, note: str) -> None:
    """Misses of +10 % and -30 % in sample: MAPE 20.0 %; held out, one miss of -5 %: 5.0 %."""

    class Miss:
        def __init__(self, error: float, cv_error: float | None) -> None:
            self.error, self.cv_error = error, cv_error

    line = model_doc._anchor_line("label", 2, figures, free, [Miss(0.1, None), Miss(-0.3, -0.05)])
    assert line == f"| label | 2 | {figures} | {free} | 20.0 % | 5.0 % | {note} |"
    assert model_doc._anchor_line("none", 0, 0, 1, []).split(" | ")[4:6] == ["—", "—"]


def test_exactly_determined_constants_are_flagged_in_the_docs() -> None:
    """docs/model.md's anchors table (generated) marks a constant with no more figures than
    unknowns, so an in-sample 0 % is never read as accuracy; every such row also shows the
    held-out miss. The calibration cell's engine constants rest on many runs, not on it."""
    text = (REPO / "docs" / "model.md").read_text(encoding="utf-8")
    block = text.split("<!-- BEGIN GENERATED: anchors -->")[1].split("<!-- END GENERATED: anchors -->")[0]
    rows = [line.split(" | ") for line in block.strip().splitlines()[2:]]
    assert rows
    for cells in rows:
        figures, free = int(cells[2]), int(cells[3])
        assert ("exactly determined" in cells[6]) == (figures <= free), cells[0]
        if figures <= free:
            assert cells[5].endswith("%"), cells[0]  # its held-out miss is shown
    trt = next(c for c in rows if c[0].startswith("| trtllm eager"))
    assert int(trt[1]) >= 4 and int(trt[2]) > int(trt[3])
