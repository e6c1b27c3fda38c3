"""The disaggregated references in `validate` (`accuracy/disagg_refs.py`): compared through the
whole deployment, never fitted, their leave-a-group-out folds, and the band out-of-range figures
carry (shipped)."""

from __future__ import annotations

import tomllib

import pytest

from deepep_calc.accuracy import disagg_refs
from deepep_calc.accuracy.validate import GroupCV, Report, Row, validate
from deepep_calc.catalog._toml import DATA
from deepep_calc.catalog.kv_transports import BANDS_FILE
from deepep_calc.catalog.references import load_disagg_refs
from deepep_calc.report.accuracy_md import disagg_markdown


@pytest.fixture(scope="module")
def report() -> Report:
    return validate()


def test_the_shipped_band_is_what_the_references_give_today() -> None:
    """catalog/data/disagg_bands.toml: regenerate with `python tools/regenerate.py disagg-bands`
    when a disaggregated reference or the model changes."""
    fresh = tomllib.loads(disagg_refs.fresh_text())
    shipped = tomllib.loads((DATA / BANDS_FILE).read_text(encoding="utf-8"))
    assert fresh["band"].keys() == shipped["band"].keys()
    for kind, band in fresh["band"].items():
        for end in ("low", "high"):
            assert band[end] == pytest.approx(shipped["band"][kind][end], rel=1e-6), (kind, end)
        assert band["low"] <= 1.0 <= band["high"]


def test_every_reference_figure_is_a_row(report: Report) -> None:
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


def test_leave_a_group_out_folds_predict_the_disaggregated_rows() -> None:
    folds = disagg_refs.group_folds(GroupCV)
    assert [g.by for g in folds] == ["disaggregated, engine", "disaggregated, model"]
    for g in folds:
        assert g.folds and all(n > 0 and m == m for _, n, m in g.folds)


def test_render_is_deterministic() -> None:
    rows = disagg_refs.rows(Row)
    assert disagg_markdown(rows) == disagg_markdown(disagg_refs.rows(Row))


def _figure(kind: str, measured: float, held_out: float | None, in_scope: bool = True) -> disagg_refs.Figure:
    return disagg_refs.Figure(kind, "ref", "metric", measured, measured, held_out, "src", False, in_scope, "")


def test_a_band_is_the_10th_to_90th_percentile_of_model_over_reference() -> None:
    """Misses 0.9, 1.0, 1.1, 1.2 and 1.3 (logs -0.1054, 0, 0.0953, 0.1823, 0.2624): NumPy's
    linear percentiles sit at positions 0.4 and 3.6, so the band is exp(0.6 x -0.1054) = 0.9387
    to exp(0.1823 + 0.6 x 0.0800) = 1.2590. A kind with fewer than three compared figures (the
    out-of-scope one and the one never predicted do not count) has none."""
    rows = [_figure("step", 10.0, 10.0 * f) for f in (0.9, 1.0, 1.1, 1.2, 1.3)]
    rows += [_figure("ttft", 1.0, 2.0), _figure("ttft", 1.0, 2.0, in_scope=False), _figure("ttft", 1.0, None)]
    assert disagg_refs.bands(rows) == {"step": (0.9387, 1.259)}


def test_a_band_always_holds_the_model_itself() -> None:
    """Every miss above 1 (1.1 to 1.5): the band still starts at 1."""
    rows = [_figure("aggregate", 1.0, f) for f in (1.1, 1.2, 1.3, 1.4, 1.5)]
    ((low, high),) = disagg_refs.bands(rows).values()
    assert low == 1.0 and 1.4 < high <= 1.5


def test_a_figure_misses_by_model_over_reference() -> None:
    assert _figure("step", 40.0, None).error == 0.0  # predicted = measured here
    fig = disagg_refs.Figure("step", "r", "TPOT ms", 40.0, 50.0, 50.0, "s", False, True, "")
    assert fig.error == pytest.approx(0.25)


def test_a_side_over_several_nodes_leaves_nvlink_to_the_default() -> None:
    """NIXL's 1P3D: one prefill node on NVLink, three decode nodes, which NVLink cannot span,
    so the decode side's transport is left to the scenario's default; attention TP 4 is kept,
    a knob only references have."""
    ref = load_disagg_refs()["nixl-1p3d-1rps-agrs-full"]
    assert (ref.prefill_nodes, ref.decode_nodes) == (1, 3)
    assert ref.prefill_transport == ref.decode_transport == "nvlink"
    s = disagg_refs.scenario_of(ref)
    assert (s.prefill_transport, s.decode_transport, s.transport) == ("nvlink", None, "efa-proxy")
    assert (s.prefill_nodes, s.decode_nodes, s.engine, s.kv_transport) == (1, 3, ref.engine, ref.kv_transport)
    assert disagg_refs.resolved_of(ref).attention_tp == ref.attention_tp == 4


def test_the_measured_figures_of_a_reference_in_their_kinds_order() -> None:
    """TPOT, TTFT and output tok/s, each only where the reference measured it (references.toml:
    the ISL-8192 run published no throughput, NIXL's 1P1D burst no TTFT)."""
    refs = load_disagg_refs()
    assert disagg_refs.measured(refs["ixk25-mooncake-isl1024-c4"]) == [
        ("step", "TPOT ms", 9.38),
        ("ttft", "TTFT ms", 221.0),
        ("aggregate", "output tok/s", 403.5),
    ]
    assert disagg_refs.measured(refs["ixk25-mooncake-isl8192-c4"]) == [
        ("step", "TPOT ms", 9.81),
        ("ttft", "TTFT ms", 850.0),
    ]
    assert disagg_refs.measured(refs["nixl-1p1d-burst-full"]) == [
        ("step", "TPOT ms", 40.91),
        ("aggregate", "output tok/s", 4082.0),
    ]
