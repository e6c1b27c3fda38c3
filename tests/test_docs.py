"""Generated documents must match the data they are generated from."""

from pathlib import Path

import pytest

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


def _close(a: object, b: object, path: str = "") -> None:
    """Equal TOML documents, floats to 1e-6 relative (a refit on another BLAS may differ in the
    last digits; anything larger means the references or the equations changed)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9), path
    else:
        assert a == b, path


def test_shipped_fit_is_what_a_fresh_fit_gives() -> None:
    """catalog/data/fitted.toml is the fit of today's catalogs: regenerate it with
    `python -m deepep_calc.fit.shipped` whenever a reference or an equation changes."""
    import tomllib

    from deepep_calc.fit.shipped import fresh_text, shipped_text

    shipped = shipped_text()
    assert shipped is not None, "catalog/data/fitted.toml is missing"
    _close(tomllib.loads(fresh_text()), tomllib.loads(shipped))
