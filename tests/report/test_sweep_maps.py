"""`report/sweep_maps.py`: a sweep's verdict map and bound map drawn as an HTML page (plotly) or a
PNG (matplotlib): the labels, titles and hover words, the legend of the verdicts shown, and each
bound's short name in its cell.

Grids come from `whatif/sweep/maps.py`; most tests build a small one (2 x 2 cells) and set its
codes by hand. `_verdicts_shown` is pinned on the cases of `legends.py`, as `verdict_map.shown`
is in `test_verdict_map.py`: the same legend for the same cells.
"""

from __future__ import annotations

import csv
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.physics.bounds import BOUNDS, EXCHANGE_BOUNDS, LABELS
from deepep_calc.report import sweep_maps
from deepep_calc.report import verdict_map as look
from deepep_calc.whatif.sweep.grid import ARM_KEYS, evaluate_chunk, iter_chunks, sweep_grid
from deepep_calc.whatif.sweep.maps import BoundMapGrid, MapGrid

from .legends import CASES, case_id, int_grid, str_grid
from .sweeps import page_data
from .sweeps import sweep_figure as _sweep_figure


def test_a_sweeps_hover_names_each_cells_own_alternative(tmp_path: Path) -> None:
    sweep = _sweep_figure({"nodes": "1,2", "concurrency": "4,32", "alternative": "allgather,tp"})
    hovers = [t["customdata"] for t in sweep["data"] if t.get("type") == "heatmap"]
    assert len(hovers) == 2  # a panel per alternative
    assert all("DeepEP / allgather aggregate" in line for row in hovers[0] for line in row)
    assert all("DeepEP / tensor parallel aggregate" in line for row in hovers[1] for line in row)
    assert all(line.endswith("(model)") for h in hovers for row in h for line in row)


@pytest.mark.slow
def test_a_sweep_writes_the_bound_columns_and_maps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, html, png = tmp_path / "g.csv", tmp_path / "b.html", tmp_path / "b.png"
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--nodes",
        "1,2",
        "--concurrency",
        "4,512",
        "--cuda-graphs",
        "true,false",
        "-o",
        out,
        "--bounds",
        "--bound-map",
        html,
    )
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8
    for row in rows:
        for arm in ("deepep", "alternative", "replica"):
            assert row[f"{arm}_bound"] in BOUNDS and row[f"{arm}_exchange_bound"] in EXCHANGE_BOUNDS
            assert float(row[f"{arm}_nic_busy_pct"]) >= 0.0 and row[f"{arm}_nic_busy_pct_tag"]
    one = evaluate(Scenario(nodes=2, concurrency=512, cuda_graphs=True)).arms["deepep"].bounds
    row = next(r for r in rows if (r["nodes"], r["concurrency"], r["cuda_graphs"]) == ("2", "512", "true"))
    assert row["deepep_bound"] == one.name
    assert "What bounds DeepEP" in html.read_text()
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--nodes",
        "1,2",
        "--concurrency",
        "4,512",
        "--bound-map",
        png,
        "--bound-arm",
        "alternative",
    )
    assert code == 0, err and png.read_bytes()[:4] == b"\x89PNG"
    plain = tmp_path / "plain.csv"
    assert run_cli(capsys, "sweep", "--nodes", "1,2", "-o", plain)[0] == 0
    assert "deepep_bound" not in plain.read_text().splitlines()[0]  # only with --bounds


# the legend: the same list as the page's map gives ------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_legend_lists_the_verdicts_the_map_holds_in_the_cards_order(case: tuple) -> None:
    cells, legend = case
    grid = SimpleNamespace(code=int_grid(cells))  # all `_verdicts_shown` reads of a MapGrid
    assert sweep_maps._verdicts_shown(grid) == legend
    assert sweep_maps._verdicts_shown(grid) == look.shown(str_grid(cells))  # the page's map agrees


# words ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (None, "default"),
        (True, "graphs"),
        (False, "eager"),
        (4.0, "4"),
        (2.5, "2.5"),
        (8, "8"),
        ("efa-gda", "efa-gda"),
    ],
)
def test_an_axis_value_reads_as_the_flags_take_it(value: object, label: str) -> None:
    assert sweep_maps._label(value) == label


@pytest.fixture(scope="module")
def two_by_two() -> MapGrid:
    """nodes 1, 2 (x) by concurrency 4, 8 (y), one panel per transport; nothing evaluated yet."""
    return MapGrid(
        sweep_grid({"nodes": "1,2", "concurrency": "4,8", "transport": "efa-proxy,efa-gda"}),
        "nodes",
        "concurrency",
    )


def test_titles_name_the_axes_and_what_is_fixed(two_by_two: MapGrid) -> None:
    assert sweep_maps._title(two_by_two) == (
        "Verdict map: concurrency against nodes "
        "(model=qwen3-30b-a3b-fp8, instance=p5en, engine=trtllm, alternative=allgather)"
    )
    assert sweep_maps._panel_titles(two_by_two) == ["transport=efa-proxy", "transport=efa-gda"]
    one = MapGrid(sweep_grid({"nodes": "1,2", "concurrency": "4,8"}), "nodes", "concurrency")
    assert sweep_maps._panel_titles(one) == [""] and "transport=efa-proxy" in sweep_maps._title(one)


def test_a_cells_value_comes_from_its_axis_its_panel_or_the_one_value_swept(two_by_two: MapGrid) -> None:
    """Cell (panel 1, y 0, x 1): nodes 2, concurrency 4, transport efa-gda, model the default."""
    assert sweep_maps._value(two_by_two, "nodes", 1, 0, 1) == 2
    assert sweep_maps._value(two_by_two, "concurrency", 1, 0, 1) == 4
    assert sweep_maps._value(two_by_two, "transport", 1, 0, 1) == "efa-gda"
    assert sweep_maps._value(two_by_two, "model", 1, 0, 1) == "qwen3-30b-a3b-fp8"


def hand_grid(grid: MapGrid, codes: list[list[int]], arm: int = 1, ratio: float = 0.5) -> MapGrid:
    """The grid's first panel with codes (VERDICT_CODES indices, -1: no row), one arm and ratio."""
    grid.code[0] = np.asarray(codes, dtype=np.int8)
    grid.arm[0] = arm
    grid.ratio[0] = ratio
    return grid


def test_codes_and_hover_lines_of_a_panel() -> None:
    """arm 1 is allgather (ARM_NAMES: deepep, allgather, tp, replica, none); the alternative of
    the panel is allgather, so the ratio is DeepEP / allgather, the model's."""
    grid = hand_grid(
        MapGrid(sweep_grid({"nodes": "1,2", "concurrency": "4,8"}), "nodes", "concurrency"), [[0, -1], [2, 1]]
    )
    assert sweep_maps._verdict_codes(grid, 0) == [["dense", None], ["capacity", "deepep"]]
    hover = sweep_maps._verdict_hover(grid, 0)
    assert hover[0][1] == look.NOT_EVALUATED
    assert (
        hover[1][1]
        == "▲ DeepEP wins on throughput<br>run allgather; DeepEP / allgather aggregate 0.50 (model)"
    )


def test_a_bound_cells_hover_names_the_cell_and_its_bound() -> None:
    grid = BoundMapGrid(sweep_grid({"nodes": "1,2", "concurrency": "4,8"}), "nodes", "concurrency")
    grid.bound[0] = np.asarray([[BOUNDS.index("hbm"), -1], [0, 1]], dtype=np.int8)
    hover = sweep_maps._bound_hover(grid, 0)
    assert hover[0] == ["nodes 1, concurrency 4<br>bound: HBM reads", "not evaluated"]
    assert hover[1][0] == "nodes 1, concurrency 8<br>bound: host launches"


def test_every_bound_has_a_short_distinct_cell_name_and_every_arm_words() -> None:
    assert set(sweep_maps.SHORT) == set(BOUNDS)
    assert len(set(sweep_maps.SHORT.values())) == len(BOUNDS)
    assert all(len(v) <= 3 for v in sweep_maps.SHORT.values())
    assert set(sweep_maps.ARM_WORDS) == set(ARM_KEYS)


def test_flat_colour_steps_are_the_verdict_maps_scale() -> None:
    """The bound map draws with the verdict map's flat steps (one scale builder for both)."""
    assert look.flat_scale(look.colours()) == look.colour_scale()
    assert look.flat_scale(["#000", "#fff"]) == [[0, "#000"], [0.5, "#000"], [0.5, "#fff"], [1, "#fff"]]


# files ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_verdict_map_png() -> None:
    """Slow: the first PNG of a process imports matplotlib (1-2 s here)."""
    grid = MapGrid(sweep_grid({"nodes": "1,2", "concurrency": "4,8"}), "nodes", "concurrency")
    for chunk in iter_chunks(grid.sweep, 64):
        grid.add(chunk)
    assert sweep_maps.draw(grid, "png")[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bound_map_page_names_the_arm_and_each_bound_it_shows() -> None:
    bound = BoundMapGrid(sweep_grid({"nodes": "1,2", "concurrency": "4,8"}), "nodes", "concurrency")
    for chunk in iter_chunks(bound.sweep, 64, evaluator=partial(evaluate_chunk, bounds=True)):
        bound.add(chunk)
    page = sweep_maps.draw(bound, "html").decode("utf-8")
    assert "What bounds DeepEP's step: concurrency against nodes" in page
    assert bound.shown()
    for k in bound.shown():
        assert f"{sweep_maps.SHORT[BOUNDS[k]]}: {LABELS[BOUNDS[k]]}" in page  # its legend entry


def test_a_map_of_more_than_900_cells_leaves_the_symbols_out() -> None:
    """31 x 31 = 961 cells: too many to read a symbol in each."""
    big = MapGrid(sweep_grid({"concurrency": "1:31", "isl": "100:130"}), "concurrency", "isl")
    big.code[:] = 0
    data = page_data(big)
    (heatmap,) = [t for t in data if t["type"] == "heatmap"]
    assert "text" not in heatmap and heatmap["xgap"] == 1
    assert [t["name"] for t in data if t["type"] == "scatter"] == [look.title("dense")]
