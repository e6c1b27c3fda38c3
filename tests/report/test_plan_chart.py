"""`report/plan_chart.py`: the plan's frontier chart (x: $ per million output tokens, log; y:
per-user tok/s), each point's hover and the card query it opens, and the page context shared by
`plan --html` and the web Plan page, where the CLI's flags become the form's fields.

The plans are `plans.py`'s small searches.
"""

from __future__ import annotations

import math

import pytest

from deepep_calc.base import palette
from deepep_calc.base.quantity import Q
from deepep_calc.report import plan_chart

from . import plans


def test_a_points_hover_names_it_then_quotes_its_tagged_figures() -> None:
    best = plans.answered().best
    per_user = best.figures["per_user_tok_s"]
    lines = plan_chart.hover(best).split("<br>")
    assert lines[0] == f"<b>{best.label}</b>"
    assert lines[1] == f"per user {per_user.scalar:,.1f} tok/s [{per_user.tag}]"
    assert lines[4] == "concurrency 32"
    assert (
        lines[-1] == "evidence assumed (outside the measured references)"
    )  # CUDA graphs on TRT-LLM: borrowed
    miss = plans.unmet().nearest_misses[0]
    assert plan_chart.hover(miss).split("<br>")[4] == "concurrency 32, misses a target"


def test_a_missing_figure_reads_n_a_with_its_unit_and_tag() -> None:
    assert plan_chart._fig(Q.assumed(math.nan, "ms", "s"), 0) == "n/a ms [assumed]"
    assert plan_chart._fig(Q.derived(1234.567, "$/Mtok", "s"), 2) == "1,234.57 $/Mtok [derived]"


def test_each_trace_carries_its_points_figures_and_card_queries() -> None:
    plan = plans.answered()
    trace = plan_chart._trace(plan.frontier, "frontier", mode="lines")
    assert trace["x"] == [p.figures["usd_per_mtok"].scalar for p in plan.frontier]
    assert trace["y"] == [p.figures["per_user_tok_s"].scalar for p in plan.frontier]
    assert trace["customdata"] == [p.card_query for p in plan.frontier]
    assert trace["mode"] == "lines" and trace["hovertemplate"] == "%{text}<extra></extra>"


def test_an_answered_plan_draws_the_cloud_the_frontier_and_the_best_on_top() -> None:
    fig = plan_chart.frontier_figure(plans.answered())
    assert [t["name"] for t in fig["data"]] == [
        "other configurations (sample)",
        "frontier",
        "cheapest meeting every target",
    ]
    assert fig["layout"]["shapes"] == []  # no per-user floor asked: no line
    assert fig["layout"]["xaxis"]["type"] == "log"
    frontier = fig["data"][1]
    assert frontier["marker"]["symbol"] == ["circle"] * len(plans.answered().frontier)  # aggregated, all meet
    assert fig["data"][2]["marker"]["symbol"] == "star"


def test_an_unmet_plan_draws_its_closest_misses_and_the_floor() -> None:
    fig = plan_chart.frontier_figure(plans.unmet())
    names = [t["name"] for t in fig["data"]]
    assert "closest misses" in names and "cheapest meeting every target" not in names
    (line,) = fig["layout"]["shapes"]
    assert (line["y0"], line["y1"]) == (1000, 1000) and line["line"]["dash"] == "dash"
    frontier = next(t for t in fig["data"] if t["name"] == "frontier")
    assert all(s.endswith("-open") for s in frontier["marker"]["symbol"])  # none meets the floor


def test_a_transport_the_catalog_lacks_is_coloured_as_host_proxied() -> None:
    assert plan_chart._colour("deepep", "efa-gda") == palette.arm_colour("deepep", False)
    assert plan_chart._colour("deepep", "no-such-transport") == palette.HOST_PROXIED
    assert plan_chart._colour("allgather", "efa-gda") == palette.DENSE


@pytest.mark.parametrize(
    ("cli", "web"),
    [
        (
            "no price (give --price-per-hour p6-b300=P)",
            "no price (type a price for p6-b300 under Price per node-hour)",
        ),
        (
            "give a price for p6-b300 (--price-per-hour p6-b300=P)",
            "give a price for p6-b300 (under Price per node-hour)",
        ),
        (
            "not ranked (--price-kinds all ranks them together)",
            "not ranked (tick Rank every price kind together)",
        ),
        pytest.param(
            "rank every price kind together (--price-kinds all): "
            "a configuration priced another way meets them",
            "tick Rank every price kind together: a configuration priced another way meets them",
            id="rank-every-price-kind-sentence",
        ),
        ("mixed (--price-kinds all)", "mixed (Rank every price kind together)"),
        ("drop --measured-only", "untick Measured evidence only"),
        ("left out (--measured-only)", "left out (Measured evidence only)"),
        ("lower --slo-tok-s to 132.4", "lower the per-user floor to 132.4"),
        ("raise --ttft-ms to 900", "raise the TTFT ceiling to 900"),
        ("raise --budget-per-hour to 80", "raise the budget to 80"),
        ("lower --request-rate to 2", "lower the request rate to 2"),
        ("raise --max-nodes to 8", "raise Most nodes to 8"),
        ("no flag here", "no flag here"),
    ],
)
def test_the_pages_sentences_name_the_forms_fields(cli: str, web: str) -> None:
    assert plan_chart.web_words(cli) == web


def test_the_web_context_rewords_every_sentence_and_the_cli_context_keeps_the_flags() -> None:
    plan = plans.unmet()
    (change,) = plan.changes
    assert change.startswith("lower --slo-tok-s to ")  # the floor the best miss reaches
    assert plan_chart.plan_context(plan)["plan"]["changes"] == [change]
    web = plan_chart.plan_context(plan, web=True)
    assert web["plan"]["changes"] == [change.replace("lower --slo-tok-s to", "lower the per-user floor to")]
    assert all(plan_chart.web_words(m) == m for p in web["plan"]["nearest_misses"] for m in p["misses"])
    assert web["plan"]["best"] is None and web["flag_lines"] == [] and web["points"]["best"] is None


def test_the_context_of_an_answered_plan() -> None:
    plan = plans.answered()
    ctx = plan_chart.plan_context(plan)
    assert ctx["figure"] == plan_chart.frontier_figure(plan)
    assert ctx["flag_lines"][0].startswith("# ") and ctx["price_line"] == ""
    assert ctx["points"]["frontier"] is plan.frontier and ctx["seconds"] == plan.seconds


def test_the_price_line_speaks_the_forms_language_on_the_page() -> None:
    plan = plans.two_price_kinds(on_purpose=False)
    assert plan_chart.price_line(plan).endswith("(--price-kinds all ranks them together)")
    assert plan_chart.plan_context(plan, web=True)["price_line"].endswith(
        "(tick Rank every price kind together)"
    )
    assert plan_chart._web_point(None) is None
