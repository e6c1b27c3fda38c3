"""The fixes: when nothing fits or no arm meets the targets, the smallest changes that would,
each checked on the same model and rule (`whatif/fixes.py`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.question.scenario import resolve
from deepep_calc.whatif.fixes import fixes_for


def _json(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "evaluate", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_nothing_fits_says_so_and_names_the_smallest_change(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--model", "deepseek-v3", "--instance", "p5", "--nodes", "1")
    v = doc["verdict"]
    assert v["status"] == "nothing_fits" and v["recommended_arm"] is None and v["flags"]["arm"] is None
    assert v["headline"].startswith("Nothing fits on 1× p5") and "cheapest" not in v["headline"]
    assert "Smallest change that fits: --nodes 2" in v["headline"]
    changes = [f["change"] for f in v["fixes"]]
    assert changes[0] == "--nodes 2" and "--instance p5en" in changes
    for fix in v["fixes"]:  # every fix offered works on the same model and rule
        after = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=1).copy(**fix["update"]))
        assert after.verdict.status == "ok" and after.arms[after.verdict.recommended_arm].feasible
    code, out, _ = run_cli(capsys, "evaluate", "--model", "deepseek-v3", "--instance", "p5", "--nodes", "1")
    assert code == 0 and "nothing runs as asked" in out and "★" not in out and "no: HBM" in out


def test_fewest_nodes_fix_agrees_with_the_breakeven_search() -> None:
    from deepep_calc.whatif.breakeven import ep_nodes

    result = evaluate(Scenario(model="kimi-k2", instance="p5", nodes=1))
    assert result.verdict.status == "nothing_fits"
    nodes_fix = result.verdict.fixes[0]
    assert nodes_fix["change"].startswith("--nodes ")
    answer = ep_nodes(resolve(Scenario(model="kimi-k2", instance="p5", nodes=1)))
    assert answer.value is not None and nodes_fix["update"]["nodes"] <= int(answer.value.scalar)


# targets no arm meets --------------------------------------------------------------------


def test_a_missed_slo_leads_the_headline_with_what_would_meet_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--slo-tok-s", "30")
    v = doc["verdict"]
    assert v["status"] == "targets_missed"
    assert v["headline"].startswith("No arm meets the 30 tok/s per-user floor")
    assert v["fixes"] and "Smallest change that meets it" in v["headline"]
    for fix in v["fixes"]:
        after = evaluate(Scenario(slo_tok_s=30).copy(**fix["update"]))
        assert after.verdict.status == "ok"
        assert after.arms[after.verdict.recommended_arm].meets_slo


def test_an_unreachable_slo_says_nothing_searched_meets_it() -> None:
    v = evaluate(Scenario(slo_tok_s=300)).verdict
    assert v.status == "targets_missed" and not v.fixes
    assert "No single change the tool searched meets it" in v.headline


def test_an_ok_verdict_has_no_fixes_and_a_fix_is_json_of_its_own() -> None:
    """`fixes_for` offers nothing for `ok`; a fix's JSON holds a copy of its update, so a reader
    that edits it changes nothing of the fix."""
    result = evaluate(Scenario(model="kimi-k2", instance="p5", nodes=1))
    assert fixes_for(evaluate(Scenario()), "ok") == []
    found = fixes_for(result, "nothing_fits")
    assert found and found[0].change.startswith("--nodes ")
    doc = found[0].to_json()
    assert doc["update"] == found[0].update and doc["update"] is not found[0].update
    assert set(doc["figures"]) == {"aggregate_tok_s", "per_user_tok_s", "ttft_ms"}
    doc["update"]["nodes"] = 0
    assert found[0].update["nodes"] > 0
