"""Generated documents must match the data they are generated from."""

from pathlib import Path

from deepep_calc.catalog.measured import render_measured_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_measured_data_doc_matches_catalog() -> None:
    assert (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8") == render_measured_markdown(), (
        "docs/MEASURED-DATA.md drifted: python -m deepep_calc.catalog.measured > docs/MEASURED-DATA.md"
    )


def test_measured_doc_lists_every_headline_number() -> None:
    text = (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8")
    for number in ("19.62", "27.57", "545.04", "794.56", "284.22", "424.67", "64.236", "106.358"):
        assert number in text


def test_model_doc_generated_sections_are_current() -> None:
    from deepep_calc.report.model_doc import render

    text = (DOCS / "model.md").read_text(encoding="utf-8")
    assert "<!-- BEGIN GENERATED: validation -->" in text
    assert render(text) == text, "docs/model.md drifted: python -m deepep_calc.report.model_doc docs/model.md"
