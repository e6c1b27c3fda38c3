"""`report/verdict_map.py`: the verdict map's one look. The page's map and a sweep's map file
encode a verdict the same way: a colour step per code in the cards' order, the code's symbol in
the cell, the verdict's title in the legend (only the verdicts shown), and a hover line.

`shown` is pinned on the cases of `legends.py`, which `test_sweep_maps.py` pins
`sweep_maps._verdicts_shown` on too: the two give the same legend for the same cells.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base import palette
from deepep_calc.base.vocabulary import SYMBOLS, VERDICT_CODES, VERDICTS_SHOWN
from deepep_calc.decide.verdict import TITLES
from deepep_calc.report import charts
from deepep_calc.report import verdict_map as look

from .legends import CASES, case_id, str_grid
from .sweeps import sweep_figure as _sweep_figure


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


@pytest.mark.parametrize("code", VERDICT_CODES)
def test_a_hover_line_leads_with_the_verdicts_title(code: str) -> None:
    line = look.hover_line(code, "replica", 0.5, "allgather", "[derived]")
    assert line.startswith(f"{SYMBOLS[code]} {TITLES[code]}<br>run single-node replicas")
    assert line.endswith("aggregate 0.50 [derived]")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_legend_lists_the_codes_a_grid_holds_in_the_cards_order(case: tuple) -> None:
    cells, legend = case
    assert look.shown(str_grid(cells)) == legend


def test_steps_map_a_grid_of_codes_to_heatmap_values() -> None:
    """dense, capacity, deepep are steps 0, 1, 2 (the cards' order); None stays None."""
    assert [look.step(c) for c in ("dense", "capacity", "deepep")] == [0, 1, 2]
    assert look.steps([["deepep", None], ["dense", "capacity"]]) == [[2, None], [0, 1]]
    with pytest.raises(ValueError):
        look.step("no such verdict")


def test_the_colour_scale_is_flat_bands_from_zero_to_one() -> None:
    scale = look.colour_scale()
    assert [point for point, _ in scale] == [0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1]
    assert (
        [colour for _, colour in scale[::2]] == look.colours() == [palette.VERDICT[c] for c in VERDICTS_SHOWN]
    )


def test_each_verdict_has_a_distinct_colour_text_colour_and_symbol_and_missing_is_none_of_them() -> None:
    assert len(set(look.colours())) == len(VERDICT_CODES)
    assert set(look.TEXT_COLOURS) == set(VERDICT_CODES)
    assert look.MISSING not in look.colours()
    assert len({look.symbol(c) for c in VERDICT_CODES}) == len(VERDICT_CODES)


def test_a_legend_entry_is_an_empty_square_in_the_verdicts_colour() -> None:
    (entry,) = look.legend(["capacity"])
    assert entry["name"] == "◆ Use DeepEP (or any EP) for CAPACITY" == look.title("capacity")
    assert entry["x"] == [None] and entry["y"] == [None]
    assert entry["marker"]["color"] == palette.VERDICT["capacity"] and entry["marker"]["symbol"] == "square"
    assert look.legend([]) == []


def test_a_big_map_leaves_the_symbols_out_and_narrows_the_gaps() -> None:
    trace = look.heatmap(["1"], ["4"], [["deepep"]], [["h"]], ("concurrency", "nodes"), text=False)
    assert "text" not in trace and trace["xgap"] == trace["ygap"] == 1
    assert trace["hovertemplate"] == "concurrency %{y}, nodes %{x}<br>%{customdata}<extra></extra>"
    small = look.heatmap(["1"], ["4"], [["deepep"]], [["h"]], ("concurrency", "nodes"))
    assert small["text"] == [["▲"]] and small["xgap"] == 2 and small["textfont"] == look.TEXT_FONT
    assert (small["zmin"], small["zmax"]) == (-0.5, 2.5)
