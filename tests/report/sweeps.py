"""A sweep's verdict map drawn to HTML and read back, for the tests of the verdict map's look
(`test_verdict_map.py`) and of the sweep's map files (`test_sweep_maps.py`)."""

from __future__ import annotations

import json
import re

from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep.grid import iter_chunks, sweep_grid
from deepep_calc.whatif.sweep.maps import MapGrid


def sweep_figure(spec: dict[str, str], x: str = "nodes", y: str = "concurrency") -> dict:
    """The plotly data of the map page a sweep of `spec` writes, and the grid behind it."""
    grid = MapGrid(sweep_grid(spec), x, y)
    for chunk in iter_chunks(grid.sweep, 64):
        grid.add(chunk)
    return {"data": page_data(grid), "grid": grid}


def page_data(grid: MapGrid) -> list[dict]:
    """The traces of the HTML map page drawn from `grid`."""
    page = draw(grid, "html").decode("utf-8")
    found = re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{", page, re.S)
    assert found, "the map page holds one plotly figure"
    return json.loads(found.group(1))
