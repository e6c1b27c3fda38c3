"""`report/plan_terminal.py`: the plan on a terminal, readable at 80 columns: the targets and the
search, the answer (or the changes that would meet the targets and the closest misses), the
frontier table with a tag letter after every number, and why a daggered configuration lies
outside the measured evidence.

The plans are `plans.py`'s small searches.
"""

from __future__ import annotations

import io
import math
import re

from rich.console import Console

from deepep_calc.base.quantity import Q
from deepep_calc.report import plan_terminal, terminal

from . import plans


def printed(plan: object, width: int = 80) -> str:
    buf = io.StringIO()
    plan_terminal.print_plan(plan, Console(file=buf, width=width, color_system=None, highlight=False))
    return buf.getvalue()


def test_a_figure_carries_its_tag_letter_so_a_pipe_keeps_the_provenance() -> None:
    assert plan_terminal.tagged(Q.derived(1234.56, "tok/s", "s"), 1).plain == "1,234.6 d"
    assert plan_terminal.tagged(Q.measured(19.62, "tok/s", "s"), 2).plain == "19.62 m"
    assert plan_terminal.tagged(Q.assumed(math.nan, "ms", "s"), 0).plain == "n/a a"
    assert set(plan_terminal.LETTER) == set(terminal.TAG_STYLE)


def test_a_band_is_said_only_for_a_banded_figure() -> None:
    assert plan_terminal._band(Q.assumed(2.0, "$/Mtok", "s"), 2) == ""
    assert plan_terminal._band(Q.assumed(2.0, "$/Mtok", "s").with_band(1.5, 3.25), 3) == " (band 1.500-3.250)"


def test_the_header_states_every_target() -> None:
    assert plan_terminal._targets(plans.answered()) == "qwen3-30b-a3b | ISL 120 / OSL 128 | 32 in flight"
    assert plan_terminal._targets(plans.by_rate()) == (
        "qwen3-30b-a3b | ISL 120 / OSL 128 | 5 requests/s | >= 10 tok/s per user | "
        "TTFT <= 2000 ms | <= 200 $/h"
    )


def test_the_price_line_says_which_kinds_were_ranked() -> None:
    """One kind of price: nothing to say. p5's Capacity Block beside p5en's on-demand: ranked
    apart unless asked, and said either way."""
    assert plan_terminal.price_line(plans.answered()) == ""
    assert plan_terminal.price_line(plans.two_price_kinds(on_purpose=False)) == (
        "Ranked on on-demand prices only (p5en); searched, not ranked: p5 (Capacity Block) "
        "(--price-kinds all ranks them together)"
    )
    assert plan_terminal.price_line(plans.two_price_kinds(on_purpose=True)) == (
        "Prices of different kinds ranked together, as asked: p5 (Capacity Block), p5en (on-demand)"
    )


def test_an_answered_plan_prints_the_cheapest_then_the_frontier() -> None:
    plan = plans.answered()
    text = printed(plan)
    lines = text.splitlines()
    assert lines[0] == "Plan: qwen3-30b-a3b | ISL 120 / OSL 128 | 32 in flight"
    assert re.fullmatch(rf"Searched {plan.searched:,} configurations in \d+\.\d\d s", lines[1])
    assert "Cheapest meeting every target" in lines
    assert f"  {plan.best.label} †" in lines  # borrowed engine constants: outside the evidence
    assert "Frontier: per-user tok/s against $/Mtok (none beats another on both)" in text
    assert "† outside the measured evidence (--measured-only leaves it out):" in lines
    assert lines[-1].rstrip() == "tags: m measured  d derived  a assumed"
    assert all(len(line) <= 80 for line in lines)


def test_an_unmet_plan_prints_the_changes_and_the_closest_misses() -> None:
    text = printed(plans.unmet())
    assert "Nothing in the search meets every target." in text
    assert f"  would meet them: {plans.unmet().changes[0]}" in text.splitlines()
    misses = text.split("Closest misses", 1)[1].split("Frontier:", 1)[0]
    assert misses.count("below") >= 1 and "-> lower --slo-tok-s to" in misses
    rows = [line for line in misses.splitlines() if re.match(r"^ +\d+ +\d+x p5en", line)]
    assert len(rows) == len(plans.unmet().nearest_misses) and all(
        line.rstrip().endswith("no") for line in rows
    )


def test_a_rate_plan_says_how_many_sequences_run_at_once() -> None:
    text = printed(plans.by_rate())
    assert "(Little's law)" in text and "$/Mtok (band " in text


def test_the_best_card_is_the_verdict_card_of_the_chosen_configuration() -> None:
    from deepep_calc import Scenario, evaluate

    buf = io.StringIO()
    result = evaluate(Scenario())
    plan_terminal.print_best_card(plans.answered(), result, Console(file=buf, width=100, color_system=None))
    assert result.verdict.title in buf.getvalue() and "Run it (" in buf.getvalue()
