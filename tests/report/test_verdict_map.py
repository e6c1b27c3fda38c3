"""The verdict map's one look: the page's map and a sweep's map file encode a verdict the same way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base import palette
from deepep_calc.base.vocabulary import SYMBOLS, VERDICT_CODES, VERDICTS_SHOWN
from deepep_calc.decide.verdict import TITLES
from deepep_calc.report import charts
from deepep_calc.report import verdict_map as look
from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep.grid import iter_chunks, sweep_grid
from deepep_calc.whatif.sweep.maps import MapGrid


def _sweep_figure(spec: dict[str, str], x: str = "nodes", y: str = "concurrency") -> dict:
    grid = MapGrid(sweep_grid(spec), x, y)
    for chunk in iter_chunks(grid.sweep, 64):
        grid.add(chunk)
    page = draw(grid, "html").decode("utf-8")
    found = re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{", page, re.S)
    assert found, "the map page holds one plotly figure"
    return {"data": json.loads(found.group(1)), "grid": grid}


def test_each_code_has_its_own_colour_step_in_the_cards_order() -> None:
    assert look.CODES == VERDICTS_SHOWN
    scale = look.colour_scale()
    for code in VERDICT_CODES:
        k = look.step(code)
        # the value k sits inside the band (k + 0.5) / len of the scale from zmin = -0.5
        where = (k + 0.5) / len(look.CODES)
        band = [
            colour for (lo, colour), (hi, _) in zip(scale[::2], scale[1::2], strict=True) if lo <= where <= hi
        ]
        assert band == [palette.VERDICT[code]]


def test_a_cell_with_no_row_stays_empty_and_says_so() -> None:
    trace = look.heatmap(["1", "2"], ["4"], [["dense", None]], [["a", look.NOT_EVALUATED]], ("y", "x"))
    assert trace["z"] == [[look.step("dense"), None]]
    assert trace["text"] == [[SYMBOLS["dense"], ""]]


def test_the_page_and_a_sweep_draw_a_verdict_alike() -> None:
    page = charts.verdict_map(evaluate(Scenario()))
    sweep = _sweep_figure({"nodes": "1,2,4", "concurrency": "1:64:x2", "transport": "efa-proxy,efa-gda"})
    page_map, sweep_map = page["data"][0], sweep["data"][0]
    for key in ("zmin", "zmax", "colorscale", "showscale", "texttemplate", "textfont"):
        assert sweep_map[key] == page_map[key], key
    codes = sweep["grid"].code[0]
    expected = [[look.step(VERDICT_CODES[c]) for c in row] for row in codes.tolist()]
    assert sweep_map["z"] == expected
    assert sweep_map["text"] == [[SYMBOLS[VERDICT_CODES[c]] for c in row] for row in codes.tolist()]


def test_legends_name_only_the_verdicts_shown_by_their_titles() -> None:
    sweep = _sweep_figure({"model": "deepseek-v3", "nodes": "1,2,4,8", "concurrency": "1:4096:x4"})
    held = {VERDICT_CODES[c] for c in np.unique(sweep["grid"].code).tolist()}
    names = [t["name"] for t in sweep["data"] if t.get("type") == "scatter"]
    assert names == [f"{SYMBOLS[c]} {TITLES[c]}" for c in VERDICTS_SHOWN if c in held]
    page = charts.verdict_map(evaluate(Scenario(model="deepseek-v3")))
    page_names = [t["name"] for t in page["data"][2:]]
    shown_on_page = {c for row in page["data"][0]["z"] for c in row}
    assert page_names == [look.title(c) for c in VERDICTS_SHOWN if look.step(c) in shown_on_page]


def test_a_sweeps_hover_names_each_cells_own_alternative(tmp_path: Path) -> None:
    sweep = _sweep_figure({"nodes": "1,2", "concurrency": "4,32", "alternative": "allgather,tp"})
    hovers = [t["customdata"] for t in sweep["data"] if t.get("type") == "heatmap"]
    assert len(hovers) == 2  # a panel per alternative
    assert all("DeepEP / allgather aggregate" in line for row in hovers[0] for line in row)
    assert all("DeepEP / tensor parallel aggregate" in line for row in hovers[1] for line in row)
    assert all(line.endswith("(model)") for h in hovers for row in h for line in row)


@pytest.mark.parametrize("code", VERDICT_CODES)
def test_a_hover_line_leads_with_the_verdicts_title(code: str) -> None:
    line = look.hover_line(code, "replica", 0.5, "allgather", "[derived]")
    assert line.startswith(f"{SYMBOLS[code]} {TITLES[code]}<br>run single-node replicas")
    assert line.endswith("aggregate 0.50 [derived]")
