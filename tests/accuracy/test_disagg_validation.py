"""The disaggregated references in `validate`: compared through the whole deployment, never
fitted, their leave-a-group-out folds, and the band out-of-range figures carry (shipped)."""

from __future__ import annotations

import tomllib

import pytest

from deepep_calc.accuracy import disagg_refs
from deepep_calc.accuracy.validate import GroupCV, Row, validate
from deepep_calc.catalog._toml import DATA
from deepep_calc.catalog.kv_transports import BANDS_FILE
from deepep_calc.catalog.references import load_disagg_refs, not_compared
from deepep_calc.report.accuracy_md import disagg_markdown


@pytest.fixture(scope="module")
def report():
    return validate()


def test_the_shipped_band_is_what_the_references_give_today():
    """catalog/data/disagg_bands.toml: regenerate with `python tools/regenerate.py disagg-bands`
    when a disaggregated reference or the model changes."""
    fresh = tomllib.loads(disagg_refs.fresh_text())
    shipped = tomllib.loads((DATA / BANDS_FILE).read_text(encoding="utf-8"))
    assert fresh["band"].keys() == shipped["band"].keys()
    for kind, band in fresh["band"].items():
        for end in ("low", "high"):
            assert band[end] == pytest.approx(shipped["band"][kind][end], rel=1e-6), (kind, end)
        assert band["low"] <= 1.0 <= band["high"]


def test_every_reference_figure_is_a_row(report):
    refs = load_disagg_refs()
    assert {r.reference for r in report.disaggregated} == set(refs)
    sources = " ".join(r.source for r in report.disaggregated)
    assert "[IXK25]" in sources and "[NIXL]" in sources
    for r in report.disaggregated:
        assert not r.fitted and r.held_out == r.predicted  # never fitted: held out is in sample
        assert r.predicted > 0 and r.kind in ("step", "ttft", "aggregate")
    compared = [r for r in report.disaggregated if r.in_scope]
    assert {r.kind for r in compared} == {"step", "ttft", "aggregate"}
    assert all(not r.in_scope for r in report.disaggregated if r.groups.get("check"))
    j = report.to_json()["disaggregated"]
    assert len(j["rows"]) == len(report.disaggregated) and j["bands"]


def test_the_disaggregated_rows_stay_out_of_the_other_bands(report):
    ids = {r.reference for r in report.rows}
    assert not ids & set(load_disagg_refs())


def test_references_not_in_the_catalog_are_listed_with_why():
    listed = {n.reference.split("]")[0] + "]": n.why for n in not_compared()}
    assert "Hy4-preview is not in the model catalog" in listed["[HY4PD]"]
    assert "admission-limited" in listed["[IXK25]"]


def test_leave_a_group_out_folds_predict_the_disaggregated_rows():
    folds = disagg_refs.group_folds(GroupCV)
    assert [g.by for g in folds] == ["disaggregated, engine", "disaggregated, model"]
    for g in folds:
        assert g.folds and all(n > 0 and m == m for _, n, m in g.folds)


def test_render_is_deterministic():
    rows = disagg_refs.rows(Row)
    assert disagg_markdown(rows) == disagg_markdown(disagg_refs.rows(Row))
