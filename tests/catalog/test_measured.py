"""`catalog/measured.py`: the measured serving cells (the calibration data) and the measured
facts (`data/measured.toml`). A cell's legs, its decode step from what was exported, its
figures as measured quantities naming the cell, and the cells by shape."""

from __future__ import annotations

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
