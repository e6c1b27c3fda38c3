"""`report/charts.py`: the page's and the report's plotly figures, laid out in Python (the page
only draws): scales, labels, axes, legends, and each number's tag in its hover text.

Figures are plain JSON dicts; the helpers that shape them (`_series`, `_wrap`, the concurrency
grid and its ticks, which part binds, the usable-HBM line) are checked on inputs worked by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.physics.bounds import BOUNDS, EXCHANGE_CLASSES
from deepep_calc.question.fields import LIMITS
from deepep_calc.report import charts
from deepep_calc.report.charts import step_bound
from deepep_calc.whatif.neighbourhood import AXES

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


def test_the_chart_stacks_the_path_and_marks_the_bound() -> None:
    result = evaluate(Scenario())
    fig = step_bound(result)
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    for i, name in enumerate(result.arms):
        total = sum(t["y"][i] or 0.0 for t in bars)
        assert total == pytest.approx(result.arms[name].bounds.step_ms.scalar)
        outlined = [t["name"] for t in bars if t["marker"]["line"]["width"][i]]
        assert outlined == ["host launches"]
    assert fig["layout"]["meta"]["bounds"] == dict.fromkeys(result.arms, "launches")
    assert any(t["name"].startswith("GPU path") for t in fig["data"])
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["bound: host launches"] * 3


# the helpers, on inputs worked by hand ---------------------------------------------------------


def test_a_number_is_json_safe() -> None:
    """plotly draws a gap for null: NaN and infinities become None, finite values floats."""
    assert charts._num(np.float64(2)) == 2.0 and isinstance(charts._num(np.int64(3)), float)
    assert [charts._num(v) for v in (float("nan"), float("inf"), -float("inf"))] == [None, None, None]


def test_a_series_is_flat_and_masked_where_the_arm_does_not_fit() -> None:
    assert charts._series([[1.0, float("nan")], [3.0, 4.0]]) == [1.0, None, 3.0, 4.0]
    assert charts._series([1.0, 2.0, 3.0], [True, False, True]) == [1.0, None, 3.0]
    assert charts._series([1.0, 2.0], np.True_) == [1.0, 2.0]  # one flag for every point


@pytest.mark.parametrize(
    ("text", "width", "wrapped"),
    [
        ("a bb ccc", 4, "a bb<br>ccc"),  # "a bb" is 4: it fits; "a bb ccc" would be 8
        ("a bb ccc", 3, "a<br>bb<br>ccc"),
        ("unbreakable", 4, "unbreakable"),  # a word longer than the width stays whole
        ("  spaced   out  ", 70, "spaced out"),
        ("", 10, ""),
    ],
)
def test_hover_text_wraps_at_spaces(text: str, width: int, wrapped: str) -> None:
    assert charts._wrap(text, width) == wrapped


def test_the_concurrency_grid_is_powers_of_two_around_the_scenario() -> None:
    """Concurrency 32 reaches max(512, 4 x 32) = 512: 1, 2, ... 512 (32 is a power already).
    Concurrency 1000 reaches 4,000: powers up to 2,048, then 1000 itself and any measured point."""
    assert charts.concurrency_grid(32).tolist() == [2.0**i for i in range(10)]
    grid = charts.concurrency_grid(1000, (3,)).tolist()
    assert grid == sorted([2.0**i for i in range(12)] + [3.0, 1000.0])
    top = LIMITS["concurrency"]
    assert charts.concurrency_grid(top)[-1] == top and charts.concurrency_grid(top).max() <= top


def test_log_ticks_keep_the_powers_of_two_thinned_to_eight_labels() -> None:
    """Ten powers (1 ... 512) and a 1000: the 1000 gets no tick, every second power does."""
    x = [2**i for i in range(10)] + [1000]
    ticks = charts._log_ticks(x)
    assert ticks["tickvals"] == [1, 4, 16, 64, 256]
    assert charts._log_ticks([512, 1024, 2048])["ticktext"] == ["512", "1,024", "2,048"]


def test_a_part_binds_when_it_is_the_bound_or_in_its_exchange_class() -> None:
    assert charts._binds("wire", "nvlink") and charts._binds("nvlink", "wire")  # bandwidth
    assert charts._binds("exchange_latency", "collective_latency")  # latency
    assert not charts._binds("wire", "messages")
    assert charts._binds("hbm", "hbm") and not charts._binds("hbm", "compute")
    for bound in BOUNDS:
        classed = [c for c, members in EXCHANGE_CLASSES.items() if bound in members]
        partners = {p for p in BOUNDS if charts._binds(bound, p)}
        assert partners == (set(EXCHANGE_CLASSES[classed[0]]) if classed else {bound}), bound


def test_a_bar_label_breaks_before_its_parenthesis_in_its_arms_colour() -> None:
    assert charts._coloured("DeepEP (efa-proxy)", "#d9480f") == (
        "<span style='color:#d9480f'><b>DeepEP<br>(efa-proxy)</b></span>"
    )
    assert "single-node<br>replicas" in charts._coloured("single-node replicas", "#868e96")


def test_usable_hbm_is_drawn_only_when_the_bars_come_near_it() -> None:
    """130 GB usable: 35 % of it is 45.5 GB. Bars of 9 GB get a scale of 9 x 1.35 = 12.15 GB and a
    note; bars of 50 GB get the line, and a scale of 130 x 1.12 = 145.6 GB."""
    usable = Q.assumed(130.0, "GB", "spec")
    top, shapes, note = charts._usable_hbm(usable, 9.0)
    assert top == pytest.approx(12.15) and shapes == []
    assert note["text"] == "usable HBM 130 GB per GPU [assumed]<br>is above this scale ↑"
    top, shapes, note = charts._usable_hbm(usable, 50.0)
    assert top == pytest.approx(145.6)
    assert [(s["y0"], s["y1"]) for s in shapes] == [(130.0, 130.0)] and note["y"] == 130.0
    top, _, _ = charts._usable_hbm(usable, 200.0)  # over usable HBM: the bars set the scale
    assert top == pytest.approx(224.0)


def test_the_measured_cells_drawn_are_this_scenarios_engine_model_nodes_and_comms() -> None:
    """The default scenario (TRT-LLM, Qwen3-30B, 2x p5en, EP_NUM_COMMS=8) has the A/B cells at
    k8 and the shim cells; EP_NUM_COMMS=1 has only the k1 cell; another model has none."""
    default = charts.measured_cells_for(evaluate(DEFAULT).resolved)
    assert {c.id for c in default} >= {"trt-ab-k8-c4", "trt-ab-k8-c32", "trt-ab-k8-c16-isl2048"}
    assert all(c.comms == 8 and c.engine == "trtllm" and c.nodes == 2 for c in default)
    assert [c.id for c in charts.measured_cells_for(evaluate(Scenario(comms=1)).resolved)] == ["trt-ab-k1-c4"]
    assert charts.measured_cells_for(evaluate(Scenario(model="deepseek-v3")).resolved) == []


def test_the_per_user_chart_overlays_the_measured_points_on_the_model_lines(default_charts: dict) -> None:
    fig = default_charts["per_user"]
    lines = [t for t in fig["data"] if t["mode"] == "lines"]
    points = [t for t in fig["data"] if t["mode"] == "markers"]
    assert len(lines) == 3 and all(": model [" in t["name"] for t in lines)
    assert {t["name"].split(":")[0] for t in points} == {"DeepEP (efa-proxy)", "allgather"}
    assert 19.62 in next(t for t in points if t["name"].startswith("DeepEP"))["y"]  # trt-ab-k8-c32
    assert lines[0]["x"] == [2**i for i in range(10)]  # the cells' 4, 8, 16 and 32 are powers already


def test_a_modelled_steps_parts_add_up_to_the_step() -> None:
    """DeepSeek-V3 on four nodes over EFA-GDA: every figure modelled, so the stacked parts of each
    arm's step reach the step the table shows (the marker)."""
    result = evaluate(Scenario(model="deepseek-v3", nodes=4, transport="efa-gda"))
    fig = charts.step_breakdown(result)
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    (marker,) = [t for t in fig["data"] if t["type"] == "scatter"]
    for i, arm in enumerate(result.arms):
        assert sum(t["y"][i] or 0.0 for t in bars) == pytest.approx(marker["y"][i], rel=1e-9)
        assert marker["y"][i] == pytest.approx(result.arms[arm].step_ms.scalar)
    assert {t["name"] for t in bars} <= set(charts.BREAKDOWN_LABELS.values())


def test_every_neighbourhood_axis_has_a_title() -> None:
    assert {f for pair in AXES for f in pair} <= set(charts.MAP_AXIS_TITLES)


def test_a_uniform_map_names_its_one_verdict() -> None:
    note = charts._uniform_note([["capacity", "capacity"]])
    assert note["text"] == "Same verdict everywhere in this range:<br>◆ Use DeepEP (or any EP) for CAPACITY"


def test_all_charts_draws_each_named_chart_and_as_figure_validates_it(default_charts: dict) -> None:
    assert list(default_charts) == list(charts.CHARTS)
    fig = charts.as_figure(default_charts["memory"])
    assert len(fig.data) == len(default_charts["memory"]["data"])
    assert [t.name for t in fig.data] == list(charts.MEMORY_LABELS.values())
