"""What bounds each arm's step, on the faces beside the card's line: the JSON (and the API's
schema), the API, the Why, the page and the mechanism page (issue #27).

The NIC busy figure at the default scenario is checked against the measured ~2.2 % with its
band: the model lands below it (about 1.1 % of the exchange's time, 0.8-1.25 %), and that is
reported, not tuned; the strict xfail below turns red the day the two meet.

These pin other layers than `report/bound_view.py` (whose line is `test_bound_view.py`'s): the
bounds in `Result.to_json()` (estimate/), the API and the pages (web/), the Why (decide/). They
wait to move to those layers' folders. The chart is `test_charts.py`'s, the sweep's bound map
`test_sweep_maps.py`'s.
"""

from __future__ import annotations

import json
import math

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.catalog.measured import load_facts
from deepep_calc.physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from deepep_calc.web.schemas import EvaluateResponse
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .bound_cases import CASES


@pytest.mark.parametrize(
    "fields", CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "calibration"
)
def test_every_arm_says_what_bounds_it_in_the_json(fields: dict) -> None:
    data = evaluate(Scenario(**fields)).to_json()
    EvaluateResponse.model_validate(data)  # the API's published contract
    for name, arm in data["arms"].items():
        b = arm["bound"]
        assert b["name"] in BOUNDS and b["label"]
        assert b["path"] in ("cpu", "gpu")
        assert math.isclose(
            sum(q["value"] for q in b["parts_ms"].values()), b["step_ms"]["value"], rel_tol=1e-9
        )
        assert b["part_ms"]["value"] <= b["step_ms"]["value"] * (1 + 1e-12)
        for q in (b["part_ms"], b["step_ms"], arm["nic_busy_pct"], arm["nic_busy_exchange_pct"]):
            assert q["tag"] in ("derived", "assumed") and "low" in q and "high" in q, name
        assert arm["exchange_bound"]["name"] in EXCHANGE_BOUNDS
        assert 0.0 <= arm["nic_busy_pct"]["value"] <= arm["nic_busy_exchange_pct"]["value"] <= 100.0
        assert arm["nic_busy_exchange_pct"]["high"] <= 100.0
        over = b["takes_over"]
        if over is not None:
            assert over["name"] != b["name"] and over["factor"]["value"] > 1.0
        assert arm["breakdown_ms"].keys() == {
            "engine",
            "hbm",
            "compute",
            "kernels",
            "moe_comm",
            "prefill",
            "proxy",
        }


def test_the_api_answers_the_same_bounds(client) -> None:  # noqa: F811
    resp = client.post("/api/evaluate", json={})
    assert resp.status_code == 200
    body = resp.json()
    mine = evaluate(Scenario()).to_json()
    for name in mine["arms"]:
        for key in ("bound", "exchange_bound", "nic_busy_pct", "nic_busy_exchange_pct"):
            assert body["arms"][name][key] == json.loads(json.dumps(mine["arms"][name][key]))


NIC_MEASURED_PCT = load_facts()["nic_utilisation"].q().value * 100.0


def test_nic_busy_at_the_calibration_scenario_is_what_the_model_counts() -> None:
    """2x p5en, Qwen3-30B, efa-proxy, concurrency 32: 4.6 MB a step over 8.7 ms of exchange at
    50 GB/s per GPU is 1.07 % (kernel band 0.82-1.25 %); over the 51.4 ms step 0.18 %. The
    measured figure (~2.2 %, method not published) lies above the band: reported, not tuned."""
    dee = evaluate(Scenario()).arms["deepep"].bounds
    ex, step = dee.nic_busy_exchange_pct, dee.nic_busy_pct
    assert ex.scalar == pytest.approx(1.07, abs=0.01) and step.scalar == pytest.approx(0.18, abs=0.005)
    assert ex.low < ex.scalar < ex.high and step.low < step.scalar < step.high
    assert ex.high < NIC_MEASURED_PCT  # the miss, stated: the band stops short of 2.2 %


@pytest.mark.xfail(
    strict=True,
    reason="the model counts 1.07 % (0.82-1.25 %) of the exchange's time against ~2.2 % measured "
    "(method not published): docs/model.md, 'What bounds the step'",
)
def test_nic_busy_at_the_calibration_scenario_lands_on_the_measured_2_2_pct() -> None:
    dee = evaluate(Scenario()).arms["deepep"].bounds
    q = dee.nic_busy_exchange_pct
    assert q.low <= NIC_MEASURED_PCT <= q.high


def test_the_why_names_the_bound_and_what_would_move_it() -> None:
    v = evaluate(Scenario()).verdict
    why = [r for r in v.reasons if r.startswith("What bounds each step")]
    move = [r for r in v.reasons if r.startswith("What would move DeepEP's bound")]
    assert len(why) == 1 and len(move) == 1
    assert "host launches" in why[0] and "2.2 %" in why[0]
    assert "--cuda-graphs" in move[0] and "would take over at" in move[0]
    graphs = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True)).verdict
    assert any(r.startswith("What would move DeepEP's bound (HBM reads)") for r in graphs.reasons)


def test_the_page_and_report_draw_it(client) -> None:  # noqa: F811
    details = client.post("/api/details", json={}).json()
    assert "bound" in details["charts"]
    assert 'data-chart="bound"' in client.get("/").text


def test_the_mechanism_page_sets_the_model_beside_the_measured(client) -> None:  # noqa: F811
    html = client.get("/mechanism").text
    assert "NIC busy while the exchange runs, this scenario (model)" in html
    assert ">1.07<" in html and ">2.2<" in html and 'id="nic-model"' in html
