"""`catalog/measured.py`: the measured serving cells (the calibration data) and the measured
facts (`data/measured.toml`). A cell's legs, its decode step from what was exported, its
figures as measured quantities naming the cell, the cells by shape (rebuilt when the cells
loaded change), and each cell's steady-state aggregate against the AIPerf export of its run."""

from __future__ import annotations

import math

import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.measured import (
    CELL_INSTANCE,
    CELL_MODEL,
    CELL_NODES,
    LEGS,
    Fact,
    cells_by_shape,
    load_cells,
    load_facts,
)
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.catalog.transports import load_transports
from deepep_calc.io.aiperf import load_aiperf
from estimate.shared import CALIBRATION_CELL as CAL
from paths import TESTS

CELLS = load_cells()


def test_the_legs_a_cell_may_have() -> None:
    assert LEGS == ("deepep", "allgather", "versus")
    c = CELLS["trt-ab-k1-c4"]
    assert c.leg("deepep") is c.deepep and c.leg("allgather") is c.allgather
    assert c.leg("versus") is None and c.leg("dense") is None  # not a leg: no attribute read


@pytest.mark.parametrize(
    ("cell", "leg", "step"),
    [
        ("trt-ab-k1-c4", "deepep", 51.9),  # the exported ITL
        ("trt-ab-k8-c4", "deepep", 1000.0 / 19.62),  # no ITL: 1000 / per-user tok/s
        ("vllm-ab-decode-c32", "deepep", None),  # an aggregate only
        ("vllm-k1-c4", "allgather", None),  # no such leg in the cell
        ("trt-ab-k1-c4", "nope", None),
    ],
)
def test_step_ms_is_the_itl_else_the_per_user_rate(cell: str, leg: str, step: float | None) -> None:
    assert CELLS[cell].step_ms(leg) == step


def test_a_cell_figure_is_measured_and_names_its_cell() -> None:
    c = CELLS["trt-ab-k1-c4"]
    q = c.q("deepep", "aggregate_tok_s", "tok/s")
    assert q is not None
    assert (q.scalar, q.unit, q.tag) == (64.236, "tok/s", Tag.MEASURED)
    assert q.source == f"{c.source} [cell trt-ab-k1-c4]"
    assert c.q("versus", "aggregate_tok_s", "tok/s") is None
    assert CELLS["trt-ab-k8-c4"].q("deepep", "itl_ms", "ms") is None


def test_a_fact_is_a_measured_quantity() -> None:
    q = Fact(name="f", value=0.3, unit="1", source="run 7").q()
    assert (q.scalar, q.unit, q.tag, q.source) == (0.3, "1", Tag.MEASURED, "run 7")
    assert all(f.source and f.name == name for name, f in load_facts().items())


def test_cells_name_catalog_rows_and_their_legs_match_their_transports() -> None:
    engines, transports, models = load_engines(), load_transports(), load_models()
    for name, c in CELLS.items():
        assert name == c.id and c.engine in engines and c.transport in transports, name
        assert (c.versus is not None) == (c.versus_transport is not None), name
        assert c.versus_transport is None or c.versus_transport in transports, name
        assert c.model in models, name
        if any(leg is not None and leg.steady_aggregate_tok_s for leg in (c.deepep, c.allgather, c.versus)):
            assert c.cold_start, name  # a steady-state figure says how it was derived


def test_the_built_in_cells_share_one_setting() -> None:
    """The default scenario asks about the same model, instance and node count."""
    assert (CELL_MODEL, CELL_INSTANCE, CELL_NODES) == ("qwen3-30b-a3b-fp8", "p5en", 2)
    assert {(c.model, c.instance, c.nodes) for c in CELLS.values()} == {
        (CELL_MODEL, CELL_INSTANCE, CELL_NODES)
    }


def test_cells_by_shape_holds_every_cell_under_its_shape_in_catalog_order() -> None:
    by_shape = cells_by_shape()
    for shape, cells in by_shape.items():
        assert all((c.concurrency, c.isl, c.osl, c.nodes) == shape for c in cells)
    flat = [c.id for cells in by_shape.values() for c in cells]
    assert sorted(flat) == sorted(CELLS)
    order = list(CELLS)
    for cells in by_shape.values():
        ids = [order.index(c.id) for c in cells]
        assert ids == sorted(ids)
    assert cells_by_shape() is by_shape  # built once for the cells loaded


def test_the_shape_index_follows_the_cells_it_was_built_from(monkeypatch) -> None:
    """The index is rebuilt when `load_cells` hands out other cells (a reloaded catalog)."""
    from deepep_calc.catalog import measured

    real = measured.cells_by_shape()
    fake = {"x": CAL.copy(id="x", concurrency=999)}
    monkeypatch.setattr(measured, "load_cells", lambda: fake)
    assert measured.cells_by_shape() == {(999, CAL.isl, CAL.osl, CAL.nodes): (fake["x"],)}
    monkeypatch.undo()
    assert measured.cells_by_shape() == real


AIPERF = TESTS / "fixtures" / "aiperf"


_RUN = "qwen3-30b-a3b-fp8_ep16_2xp5en"


EXPORTS = {  # catalog cell, arm -> that run's AIPerf export
    ("trt-ab-k1-c4", "deepep"): f"trtllm-0.21_{_RUN}_deepep-epnc1_c4_isl120.json",
    ("trt-ab-k1-c4", "allgather"): f"trtllm-0.21_{_RUN}_dense-allgather_c4_isl120.json",
    **{(f"trt-shim-c{c}", "deepep"): f"trtllm-0.21_{_RUN}_deepep-shim_c{c}_isl120.json" for c in (4, 8, 32)},
    **{
        (f"vllm-k{k}-c{c}", "deepep"): f"vllm-0.24_{_RUN}_deepep-epnc{k}_c{c}_isl120.json"
        for k in (1, 8)
        for c in (4, 8, 32)
    },
    **{
        (f"sglang-k8-c{c}", "deepep"): f"sglang-0.5.11_{_RUN}_deepep-epnc8_c{c}_isl120.json"
        for c in (4, 8, 32)
    },
}


@pytest.mark.parametrize(("cell", "leg"), list(EXPORTS), ids=lambda x: str(x))
def test_a_catalog_steady_state_aggregate_is_its_exports(cell: str, leg: str) -> None:
    """The catalog carries a steady-state aggregate exactly where the run's own export shows a
    first-wave cold start (io/aiperf/cold_start.py, the rule `calibrate` applies to a
    user's runs), with the value that rule derives from it."""
    run = load_aiperf(AIPERF / EXPORTS[cell, leg])
    c = load_cells()[cell]
    m = c.leg(leg)
    assert m is not None and run.aggregate_tok_s is not None and m.aggregate_tok_s is not None
    assert math.isclose(m.aggregate_tok_s, run.aggregate_tok_s.scalar, rel_tol=0.01)  # the same run
    if run.steady_aggregate_tok_s is None:
        assert m.steady_aggregate_tok_s is None
        return
    assert m.steady_aggregate_tok_s is not None and "cold start" in c.cold_start
    assert math.isclose(m.steady_aggregate_tok_s, run.steady_aggregate_tok_s.scalar, abs_tol=0.01)
