"""Chart layout choices made in Python (the page only draws): scales, labels, axes, legends."""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.report import charts
from deepep_calc.report.view import tag_segments, verdict_text

DEFAULT = Scenario()
CAPACITY_EVERYWHERE = Scenario(model="kimi-k2")
BIG_MEMORY = Scenario(model="qwen3-235b-a22b", instance="p5", nodes=2, concurrency=64)


@pytest.fixture(scope="module")
def default_charts() -> dict:
    return charts.all_charts(evaluate(DEFAULT))


def test_legends_sit_below_and_the_toolbar_has_its_margin(default_charts: dict) -> None:
    for name, fig in default_charts.items():
        layout = fig["layout"]
        assert layout["legend"]["yref"] == "container" and layout["legend"]["y"] == 0, name
        assert layout["legend"]["yanchor"] == "bottom"
        assert layout["margin"]["t"] >= 30, name  # the toolbar's row
        assert "height" not in layout, name  # the page's stylesheet sizes the charts


def test_this_scenario_label_has_a_band_of_its_own(default_charts: dict) -> None:
    fig = default_charts["per_user"]
    highest = max(v for t in fig["data"] for v in t["y"] if v is not None)
    top = fig["layout"]["yaxis"]["range"][1]
    assert top >= charts.HEADROOM * highest * 0.999
    (label,) = [a for a in fig["layout"]["annotations"] if a["text"] == "this scenario"]
    assert label["yref"] == "paper" and label["y"] == 1 and label["yanchor"] == "top"
    assert label["bgcolor"]


def test_memory_scale_follows_the_parts_when_hbm_is_far_above() -> None:
    result = evaluate(DEFAULT)
    fig = charts.memory_chart(result)
    tallest = max(a.memory.total_gb.scalar for a in result.arms.values())
    usable = result.arms["deepep"].memory.usable_gb.scalar
    assert tallest < 0.1 * usable  # the case the issue reports (about 9 of 130 GB)
    top = fig["layout"]["yaxis"]["range"][1]
    assert tallest < top <= 1.5 * tallest
    assert fig["layout"]["shapes"] == []
    assert any("above this scale" in a["text"] for a in fig["layout"]["annotations"])


def test_memory_draws_usable_hbm_when_the_parts_come_near_it() -> None:
    result = evaluate(BIG_MEMORY)
    usable = result.arms["deepep"].memory.usable_gb.scalar
    tallest = max(a.memory.total_gb.scalar for a in result.arms.values())
    assert tallest >= charts.MEMORY_LINE_SHARE * usable
    fig = charts.memory_chart(result)
    assert fig["layout"]["yaxis"]["range"][1] >= usable
    assert [s["y0"] for s in fig["layout"]["shapes"]] == [usable]


def test_verdict_map_picks_axes_where_the_verdict_changes() -> None:
    fig = charts.verdict_map(evaluate(DEFAULT))
    z = np.asarray(fig["data"][0]["z"])
    assert len(set(z.reshape(-1).tolist())) >= 2
    assert fig["layout"]["meta"]["uniform"] is False
    y_field, x_field = fig["layout"]["meta"]["axes"]
    assert fig["layout"]["xaxis"]["title"]["text"] == charts.MAP_AXIS_TITLES[x_field]
    assert fig["layout"]["yaxis"]["title"]["text"] == charts.MAP_AXIS_TITLES[y_field]
    mark = fig["data"][1]
    assert mark["name"] == "this scenario"
    assert mark["x"][0] in fig["data"][0]["x"] and mark["y"][0] in fig["data"][0]["y"]


def test_verdict_map_says_when_one_verdict_holds_everywhere() -> None:
    fig = charts.verdict_map(evaluate(CAPACITY_EVERYWHERE))
    assert fig["layout"]["meta"]["uniform"] is True
    assert len(set(np.asarray(fig["data"][0]["z"]).reshape(-1).tolist())) == 1
    (note,) = fig["layout"]["annotations"]
    assert note["text"].startswith("Same verdict everywhere in this range")
    legend = [t["name"] for t in fig["data"][2:]]
    assert len(legend) == 1 and "CAPACITY" in legend[0]  # only the colour on the map


@pytest.mark.parametrize(
    "text",
    [
        "DeepEP reaches 0.69 [derived] of the aggregate and pays 14.7 ms/token [derived] more.",
        "[measured] at the start, and [assumed] at the end [assumed]",
        "no tags at all",
        "a bracket [that is not a tag] stays text",
    ],
)
def test_tag_segments_round_trip(text: str) -> None:
    segments = tag_segments(text)
    assert "".join(s.get("text", f"[{s.get('tag')}]") for s in segments) == text
    assert not any("[measured]" in s.get("text", "") or "[derived]" in s.get("text", "") for s in segments)


def test_verdict_text_covers_every_sentence() -> None:
    v = evaluate(DEFAULT).to_json()["verdict"]
    vt = verdict_text(v)
    assert len(vt["reasons"]) == len(v["reasons"]) and len(vt["advisories"]) == len(v["advisories"])
    assert any("tag" in s for s in vt["headline"])
    assert vt["robustness"][0]["text"].startswith("Verdict is ")
