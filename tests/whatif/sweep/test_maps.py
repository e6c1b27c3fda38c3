"""The grids behind a sweep's maps (`whatif/sweep/maps.py`): every cell filled with its
verdict, the map files drawn from them, and the refusals of a map that cannot be drawn."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.base.vocabulary import SYMBOLS, VERDICT_CODES
from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep import maps
from deepep_calc.whatif.sweep.grid import evaluate_chunk, iter_chunks, sweep_grid
from one_line import assert_one_line
from sweep_rows import run_sweep, sweep_rows


def test_verdict_maps(tmp_path: Path) -> None:
    spec = {
        "model": "deepseek-v3",
        "transport": "efa-proxy,efa-gda",
        "nodes": "1,2,4,8",
        "concurrency": "1:4096:x4",
    }
    grid = sweep_grid(spec)
    html = tmp_path / "map.html"
    summary = run_sweep(grid, map_path=str(html), draw=draw)
    text = html.read_text(encoding="utf-8")
    assert "plotly" in text.lower() and "transport=efa-gda" in text
    for code in summary.verdicts:  # each verdict in its legend entry and its cells
        assert f'"name":"{SYMBOLS[code]} ' in text
    pytest.importorskip("matplotlib")
    png = tmp_path / "map.png"
    run_sweep(grid, map_path=str(png), draw=draw)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.html", "map.png"]


def test_map_grid_holds_every_verdict() -> None:
    from deepep_calc.whatif.sweep.maps import MapGrid

    grid = sweep_grid({"transport": "efa-proxy,efa-gda", "nodes": "1,2,4", "concurrency": "1:64:x2"})
    cells = MapGrid(grid, "nodes", "concurrency")
    for chunk in iter_chunks(grid, 5):
        cells.add(chunk)
    assert cells.code.shape == (2, 7, 3)
    assert (cells.code >= 0).all()
    rows = sweep_rows(grid)
    first = rows[0]
    assert VERDICT_CODES[cells.code[0, 0, 0]] == first["verdict"]


# The targets and the grids, directly --------------------------------------------------------------


def finder(found: bool) -> SimpleNamespace:
    """What `maps` sees as `importlib`: `util.find_spec` finding every module, or none."""
    return SimpleNamespace(util=SimpleNamespace(find_spec=lambda name: object() if found else None))


@pytest.mark.parametrize(
    ("path", "fmt"), [("-", "html"), ("map.html", "html"), ("out/MAP.HTM", "html"), ("map.png", "png")]
)
def test_a_map_target_is_html_or_png_by_its_suffix(
    path: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-` is an HTML page on standard output; a PNG needs matplotlib, looked up, not imported."""
    monkeypatch.setattr(maps, "importlib", finder(found=True))
    assert maps.check_map_target(path) == fmt


def test_a_map_that_cannot_be_drawn_is_refused_naming_its_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CalcError) as err:
        maps.check_map_target("map.svg", "--bound-map")
    assert err.value.field == "--bound-map"
    assert_one_line(err.value, "--bound-map map.svg", "must end in .html or .png")
    monkeypatch.setattr(maps, "importlib", finder(found=False))  # no matplotlib
    with pytest.raises(CalcError) as err:
        maps.check_map_target("map.png")
    assert_one_line(err.value, "--map map.png", "PNG maps need matplotlib", "an .html map needs nothing more")
    assert maps.check_map_target("map.html") == "html"


def test_a_map_grid_is_panels_by_y_by_x_and_starts_empty() -> None:
    """Two transports vary besides the axes: two panels of 3 concurrencies (y) by 2 node counts (x)."""
    grid = sweep_grid({"transport": "efa-proxy,efa-gda", "nodes": "1,2", "concurrency": "1,4,16"})
    cells = maps.MapGrid(grid, "nodes", "concurrency")
    assert cells.panels == ("transport",) and cells.panel_shape == (2,)
    assert cells.code.shape == cells.arm.shape == cells.ratio.shape == (2, 3, 2)
    assert (cells.code == -1).all() and np.isnan(cells.ratio).all()


@pytest.mark.parametrize(
    ("x", "y", "flag"),
    [("speed", "concurrency", "--x"), ("nodes", "speed", "--y"), ("nodes", "nodes", "--y")],
)
def test_map_axes_must_be_two_scenario_fields(x: str, y: str, flag: str) -> None:
    with pytest.raises(InputError) as err:
        maps.MapGrid(sweep_grid({"nodes": "1,2"}), x, y)
    assert err.value.field == flag


def test_a_map_with_too_many_cells_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maps, "MAX_CELLS", 5)
    grid = sweep_grid({"nodes": "1,2", "concurrency": "1,2,4"})  # 6 cells
    with pytest.raises(InputError, match="at most 5 map cells"):
        maps.MapGrid(grid, "nodes", "concurrency")


def test_a_bound_map_names_one_of_the_three_arms_and_shows_the_bounds_present() -> None:
    grid = sweep_grid({"nodes": "1,2", "concurrency": "1,4"})
    with pytest.raises(InputError) as err:
        maps.BoundMapGrid(grid, "nodes", "concurrency", "allgather")
    assert err.value.field == "--bound-arm" and "deepep or alternative or replica" in err.value.message
    cells = maps.BoundMapGrid(grid, "nodes", "concurrency", "alternative")
    assert cells.shown() == []  # nothing filled yet
    cells.bound[0] = [[3, 1], [3, -1]]
    assert cells.shown() == [1, 3]  # the indices present, in order, the unfilled left out


def test_a_bound_map_is_filled_with_the_arms_bound_from_each_chunk() -> None:
    grid = sweep_grid({"nodes": "1,2", "concurrency": "1,4,16"})
    cells = maps.BoundMapGrid(grid, "nodes", "concurrency", "deepep")
    for chunk in iter_chunks(grid, 4, evaluator=partial(evaluate_chunk, bounds=True)):
        cells.add(chunk)
    rows = sweep_rows(grid)  # nodes x concurrency in row order
    assert (cells.bound >= 0).all() and (cells.code >= 0).all()
    for row, (yi, xi) in zip(rows, [(c, n) for n in range(2) for c in range(3)], strict=True):
        assert VERDICT_CODES[cells.code[0, yi, xi]] == row["verdict"]
