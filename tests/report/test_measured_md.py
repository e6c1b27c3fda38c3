"""`report/measured_md.py`: docs/MEASURED-DATA.md, the measured cells and scalar facts of
`catalog/data/measured.toml` as Markdown, generated so the document cannot drift from the data.
"""

from __future__ import annotations

from deepep_calc.catalog.measured import LEGS, load_cells, load_facts
from deepep_calc.report import measured_md
from deepep_calc.report.measured_md import render_measured_markdown
from paths import REPO

DOCS = REPO / "docs"


def test_measured_data_doc_matches_catalog() -> None:
    assert (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8") == render_measured_markdown(), (
        "docs/MEASURED-DATA.md drifted: python -m deepep_calc.report.measured_md > docs/MEASURED-DATA.md"
    )


def test_measured_doc_lists_every_headline_number() -> None:
    text = (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8")
    for number in ("19.62", "27.57", "545.04", "794.56", "284.22", "424.67", "64.236", "106.358"):
        assert number in text


def cell_table() -> list[list[str]]:
    """The first table's data rows, split into cells."""
    text = render_measured_markdown()
    table = text.split("|---|---|", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[1:]]


def test_a_missing_figure_prints_empty_and_a_present_one_as_written() -> None:
    assert [measured_md._fmt(v) for v in (None, 19.62, 545.04, 100.0, 0.00001)] == [
        "",
        "19.62",
        "545.04",
        "100",
        "1e-05",
    ]


def test_one_row_per_measured_leg_of_every_cell() -> None:
    """20 cells: the 4 TRT-LLM A/B cells and the 2 vLLM A/B cells have two legs, the 2
    DeepEP-against-UCCL cells two (deepep and versus), the other 12 one: 12 + 2 x 8 = 28."""
    rows = cell_table()
    assert all(len(r) == 14 for r in rows)
    assert len(rows) == sum(1 for c in load_cells().values() for leg in LEGS if c.leg(leg) is not None) == 28


def test_each_legs_transport_is_its_own_and_unstated_settings_are_starred() -> None:
    """An allgather leg rides no DeepEP transport; a versus leg names its rival's. trt-shim-c4's
    EP_NUM_COMMS and trt-ab-k8-c16-isl2048's OSL were not stated by their sources."""
    rows = {(r[0], r[8]): r for r in cell_table()}
    assert rows[("trt-ab-k8-c32", "allgather")][3] == "allgather"
    assert rows[("sglang-deepep-vs-uccl-c32", "versus")][3] == "efa-uccl"
    assert rows[("trt-shim-c4", "deepep")][4].endswith("*")
    assert rows[("trt-ab-k8-c16-isl2048", "deepep")][7].endswith("*")
    assert not rows[("trt-ab-k8-c32", "deepep")][4].endswith("*")


def test_cold_starts_and_scalar_facts_have_their_sections() -> None:
    """The cold-start table lists the cells whose export shows a cold start and that carry a
    steady-state figure; the scalar table every fact."""
    text = render_measured_markdown()
    cold = text.split("## Cold starts (derived)", 1)[1].split("## ", 1)[0]
    shown = {
        line.split("|")[1].strip()
        for line in cold.splitlines()
        if line.startswith("| ") and "| id |" not in line
    }
    steady = {
        c.id
        for c in load_cells().values()
        if c.cold_start
        and any(c.leg(g) is not None and c.leg(g).steady_aggregate_tok_s is not None for g in LEGS)
    }
    assert shown == steady and shown
    facts = text.split("## Scalar observations", 1)[1]
    for name in load_facts():
        assert f"| {name} | " in facts
    assert text.startswith("# Measured data\n") and text.endswith("\n")
