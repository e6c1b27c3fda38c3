"""What bounds each arm's step, on every face: the JSON (and the API's schema), the card's line,
the Why, the chart, the mechanism page, the sweep's columns and its bound map (issue #27).

The NIC busy figure at the default scenario is checked against the measured ~2.2 % with its
band: the model lands below it (about 1.1 % of the exchange's time, 0.8-1.25 %), and that is
reported, not tuned; the strict xfail below turns red the day the two meet.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.catalog.measured import load_facts
from deepep_calc.physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from deepep_calc.report.bound_view import bound_line
from deepep_calc.report.charts import step_bound
from deepep_calc.report.terminal import print_result
from deepep_calc.web.schemas import EvaluateResponse
from web_fixtures import app, client  # noqa: F401  (fixtures)


def IDS(fields: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in fields.items()) or "calibration"


CASES = [
    {},
    {"model": "deepseek-v3", "nodes": 2, "engine": "sglang", "cuda_graphs": True},
    {"model": "kimi-k2", "nodes": 4, "engine": "vllm"},
    {"nodes": 1},
    {"model": "deepseek-v3", "nodes": 4, "transport": "efa-gda", "cuda_graphs": True, "concurrency": 1024},
    {"model": "qwen3-235b-a22b", "instance": "p5", "nodes": 2, "alternative": "tp", "slo_tok_s": 40},
]


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


@pytest.mark.parametrize(
    "fields", CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "calibration"
)
def test_the_card_says_it_in_one_line_of_80_columns(fields: dict) -> None:
    result = evaluate(Scenario(**fields))
    line = bound_line(result, 76)
    assert line is not None and line.cell_len <= 76 and "\n" not in line.plain
    assert line.plain.startswith("Bound")
    console = Console(width=80, record=True, color_system=None, force_terminal=False)
    print_result(result, console)
    text = console.export_text()
    assert line.plain in text


def test_the_why_names_the_bound_and_what_would_move_it() -> None:
    v = evaluate(Scenario()).verdict
    why = [r for r in v.reasons if r.startswith("What bounds each step")]
    move = [r for r in v.reasons if r.startswith("What would move DeepEP's bound")]
    assert len(why) == 1 and len(move) == 1
    assert "host launches" in why[0] and "2.2 %" in why[0]
    assert "--cuda-graphs" in move[0] and "would take over at" in move[0]
    graphs = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True)).verdict
    assert any(r.startswith("What would move DeepEP's bound (HBM reads)") for r in graphs.reasons)


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


def test_the_page_and_report_draw_it(client) -> None:  # noqa: F811
    details = client.post("/api/details", json={}).json()
    assert "bound" in details["charts"]
    assert 'data-chart="bound"' in client.get("/").text


def test_the_mechanism_page_sets_the_model_beside_the_measured(client) -> None:  # noqa: F811
    html = client.get("/mechanism").text
    assert "NIC busy while the exchange runs, this scenario (model)" in html
    assert ">1.07<" in html and ">2.2<" in html and 'id="nic-model"' in html


@pytest.mark.slow
def test_a_sweep_writes_the_bound_columns_and_maps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, html, png = tmp_path / "g.csv", tmp_path / "b.html", tmp_path / "b.png"
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--nodes",
        "1,2",
        "--concurrency",
        "4,512",
        "--cuda-graphs",
        "true,false",
        "-o",
        out,
        "--bounds",
        "--bound-map",
        html,
    )
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8
    for row in rows:
        for arm in ("deepep", "alternative", "replica"):
            assert row[f"{arm}_bound"] in BOUNDS and row[f"{arm}_exchange_bound"] in EXCHANGE_BOUNDS
            assert float(row[f"{arm}_nic_busy_pct"]) >= 0.0 and row[f"{arm}_nic_busy_pct_tag"]
    one = evaluate(Scenario(nodes=2, concurrency=512, cuda_graphs=True)).arms["deepep"].bounds
    row = next(r for r in rows if (r["nodes"], r["concurrency"], r["cuda_graphs"]) == ("2", "512", "true"))
    assert row["deepep_bound"] == one.name
    assert "What bounds DeepEP" in html.read_text()
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--nodes",
        "1,2",
        "--concurrency",
        "4,512",
        "--bound-map",
        png,
        "--bound-arm",
        "alternative",
    )
    assert code == 0, err and png.read_bytes()[:4] == b"\x89PNG"
    plain = tmp_path / "plain.csv"
    assert run_cli(capsys, "sweep", "--nodes", "1,2", "-o", plain)[0] == 0
    assert "deepep_bound" not in plain.read_text().splitlines()[0]  # only with --bounds
