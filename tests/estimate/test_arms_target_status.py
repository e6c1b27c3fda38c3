"""estimate/arms.py, `target_status`: targets are three-valued where a band exists (issue #25
item 5). An SLO or TTFT target is met, missed, or within the band of the figure (its error band
spans the target, so the model cannot tell); each arm carries its status beside the rule's flag,
and the card, the page, the reports and every plan point show it. The verdict's rule still reads
the figure itself (`meets_slo`, `meets_ttft` keep their meaning).
"""

from __future__ import annotations

import json
import re

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.estimate.arms import target_status
from deepep_calc.report.markdown import render_markdown
from deepep_calc.report.plan_html import render_plan_html
from deepep_calc.whatif.plan.search import plan_request, run_plan
from web_fixtures import app, client  # noqa: F401

# the calibration cluster: DeepEP and allgather per-user figures are measured (no band), the
# replicas' is modelled with a band of 23.1-29.6 tok/s around 27.7
TARGETED = Scenario(slo_tok_s=27, ttft_ms=100)


@pytest.mark.parametrize(
    ("value", "low", "high", "target", "floor", "expected"),
    [
        (30.0, 28.0, 32.0, 27.0, True, "meets"),
        (30.0, 26.0, 32.0, 27.0, True, "within the band"),
        (25.0, 23.0, 26.0, 27.0, True, "misses"),
        (25.0, 23.0, 28.0, 27.0, True, "within the band"),  # the figure misses, its band does not
        (90.0, 80.0, 99.0, 100.0, False, "meets"),
        (90.0, 80.0, 120.0, 100.0, False, "within the band"),
        (130.0, 110.0, 150.0, 100.0, False, "misses"),
        (19.6, None, None, 27.0, True, "misses"),  # a measured figure has no band
    ],
)
def test_target_status_is_three_valued(value, low, high, target, floor, expected) -> None:
    q = Q.assumed(value, "tok/s", "t") if low is None else Q.assumed(value, "tok/s", "t").with_band(low, high)
    if low is None:
        q = Q.measured(value, "tok/s", "t")
    assert target_status(q, target, floor) == expected


def test_each_arm_carries_its_status_beside_the_rule_flag() -> None:
    result = evaluate(TARGETED)
    rep, dee, alt = (result.arms[n] for n in ("replica", "deepep", "allgather"))
    assert rep.per_user_tok_s.low < 27 < rep.per_user_tok_s.high
    assert rep.slo_status == "within the band" and rep.meets_slo is True  # the rule reads the figure
    assert dee.per_user_tok_s.low is None and dee.slo_status == "misses"  # measured: no band
    assert alt.slo_status == "meets"
    doc = result.to_json()
    assert doc["arms"]["replica"]["slo_status"] == "within the band"
    assert {a["ttft_status"] for a in doc["arms"].values()} <= {"meets", "misses", "within the band"}
    assert any("within the band of the per-user floor of 27 tok/s" in a for a in result.verdict.advisories)
    assert evaluate(Scenario()).arms["replica"].slo_status is None  # no target, no status


def test_the_card_the_report_and_the_page_show_the_statuses(capsys, client) -> None:  # noqa: F811
    code, out, _ = run_cli(capsys, "evaluate", "--slo-tok-s", "27", "--ttft-ms", "100")
    assert code == 0
    row = next(line for line in out.splitlines() if "floor 27 tok/s/user" in line)
    assert re.search(r"misses\s+meets\s+within the band", row), row
    assert any("TTFT ceiling 100 ms" in line for line in out.splitlines())
    md = render_markdown(evaluate(TARGETED))
    assert "| Per-user floor (≥ 27 tok/s) | misses | meets | within the band |" in md
    page = client.get("/?slo_tok_s=27&ttft_ms=100").text
    assert "Per-user floor (≥ 27 tok/s)" in page
    assert 'class="status status-within-the-band">within the band</td>' in page


@pytest.mark.slow
def test_a_plan_point_whose_band_crosses_a_target_says_so(capsys) -> None:
    fields = {"model": "qwen3-235b-a22b", "concurrency": 64, "slo_tok_s": 40}
    plan = run_plan(plan_request(**fields))
    points = [p for p in [plan.best, *plan.frontier] if p is not None]
    crossing = [p for p in points if p.target_status.get("slo_tok_s") == "within the band"]
    assert crossing, [p.target_status for p in points]
    for p in points:
        q = p.figures["per_user_tok_s"]
        inside = q.banded and float(q.low) <= 40 <= float(q.high)
        assert (p.target_status["slo_tok_s"] == "within the band") is inside
        assert p.to_json()["target_status"] == p.target_status
    assert 'class="band-note">per-user floor: within the band' in render_plan_html(plan)
    code, out, _ = run_cli(
        capsys, "plan", "--model", "qwen3-235b-a22b", "--concurrency", "64", "--slo-tok-s", "40"
    )
    assert code == 0 and "band spans the floor" in out
    code, out, _ = run_cli(
        capsys, "plan", "--model", "qwen3-235b-a22b", "--concurrency", "64", "--slo-tok-s", "40", "--json"
    )
    doc = json.loads(out)
    statuses = [p["target_status"]["slo_tok_s"] for p in doc["frontier"]]
    assert "within the band" in statuses
