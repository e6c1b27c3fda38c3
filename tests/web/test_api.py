"""The JSON API's routes (`web/api.py`): each answers what the CLI's `--json` prints for the same
question, its documented schema describes the real answer, and the small LRU and JSON writer
the routes stand on. (That one request is digested once and the model runs once for
`/api/evaluate` and `/api/details` is `test_api_cache.py`.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

from deepep_calc.api import evaluate
from deepep_calc.estimate.kernel import kernel_json, kernel_query
from deepep_calc.question.scenario import Scenario
from deepep_calc.report.catalogs import instances_rows, models_rows, transports_rows
from deepep_calc.web import api
from deepep_calc.web.api import LRU, dumps
from deepep_calc.web.schemas import (
    DetailsResponse,
    EvaluateRequest,
    EvaluateResponse,
    InstanceRow,
    KernelResponse,
    ModelRow,
    TransportRow,
)
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import HF, clean, error_of, post


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"model": "deepseek-v3", "nodes": 4},
        {"model": "kimi-k2", "transport": "efa-gda", "concurrency": 512},
        {"instance": "ib-h800", "transport": "ib-ibgda", "alternative": "tp", "slo_tok_s": 20.0},
        {"engine": "vllm", "comms": 1, "concurrency": 4, "cuda_graphs": True, "price_per_hour": 50.0},
    ],
)
def test_evaluate_equals_cli_json(client, fields):  # noqa: F811
    resp = post(client, "/api/evaluate", fields)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    expected = json.loads(json.dumps(evaluate(Scenario(**fields)).to_json()))
    assert resp.json() == expected
    EvaluateResponse.model_validate(resp.json())  # the documented schema describes the real thing


def test_details_carry_charts_provenance_and_model(client):  # noqa: F811
    resp = post(client, "/api/details", {"model": "deepseek-v3", "nodes": 4})
    assert resp.status_code == 200
    d = DetailsResponse.model_validate(resp.json())
    assert set(d.charts) == {"per_user", "breakdown", "bound", "memory", "verdict_map"}
    assert d.model.name == "deepseek-v3" and d.model.experts == 256
    assert {r.tag for r in d.provenance} <= {"measured", "derived", "assumed"}
    assert len(d.provenance) > 40
    assert d.cli == "deepep-calc evaluate --model deepseek-v3 --nodes 4"
    # the bands are part of the documented response: modelled figures carry one, measured none
    assert d.bands.arms["deepep"]["aggregate_tok_s"].startswith("(")
    assert any(r.band for r in d.provenance) and all(not r.band for r in d.provenance if r.tag == "measured")
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "bands" in schema["DetailsResponse"]["required"]
    assert "band" in schema["ProvenanceRow"]["properties"]


@pytest.mark.parametrize(
    ("path", "rows", "model"),
    [
        ("/api/models", models_rows, ModelRow),
        ("/api/instances", instances_rows, InstanceRow),
        ("/api/transports", transports_rows, TransportRow),
    ],
)
def test_catalog_endpoints_match_the_cli(client, path, rows, model):  # noqa: F811
    resp = clean(client.get(path))
    assert resp.status_code == 200
    assert resp.json() == json.loads(json.dumps(rows()))
    for row in resp.json():
        model.model_validate(row)


def test_kernel_endpoint_matches_the_cli(client):  # noqa: F811
    resp = post(client, "/api/kernel", {"transport": "efa-gda", "ep": 32})
    assert resp.status_code == 200
    expected = kernel_json(kernel_query(transport="efa-gda", ep=32))
    assert resp.json() == json.loads(json.dumps(expected))
    KernelResponse.model_validate(resp.json())
    default = post(client, "/api/kernel", {}).json()
    assert default["dispatch_us"]["tag"] == "measured"  # the primary reference itself


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"topk": 9, "experts": 8}, "topk"),
        ({"ep": -4}, "ep"),
        ({"transport": "carrier-pigeon"}, "transport"),
        ({"dispatch_dtype": "fp4"}, "dispatch_dtype"),
        ({"instance": "ib-h800"}, "instance"),
    ],
)
def test_kernel_bad_input(client, fields, field):  # noqa: F811
    assert error_of(post(client, "/api/kernel", fields))["field"] == field


def test_endpoints_against_figures_stated_here(client):  # noqa: F811
    """The parity tests above compare the API with the functions it calls; this one holds the
    endpoints to figures written down independently, from the shared fact files: the A/B
    headline (19.62 vs 27.57 tok/s per user, 545.04 vs 794.56 tok/s aggregate, facts/measured),
    the efa-proxy gate run on 2x p5en EP16 (dispatch 185.4 + combine 258.2 us, facts/kernels),
    DeepSeek-V3's and Qwen3-30B-A3B's shapes (facts/models) and the instances' HBM (facts/hardware)."""
    card = post(client, "/api/evaluate", {}).json()
    assert card["verdict"]["code"] == "dense"
    for arm, per_user, aggregate in (("deepep", 19.62, 545.04), ("allgather", 27.57, 794.56)):
        figures = card["arms"][arm]
        assert (figures["per_user_tok_s"]["value"], figures["per_user_tok_s"]["tag"]) == (
            per_user,
            "measured",
        )
        assert (figures["aggregate_tok_s"]["value"], figures["aggregate_tok_s"]["tag"]) == (
            aggregate,
            "measured",
        )
    kernel = post(client, "/api/kernel", {"qps": 6}).json()  # the gate run used 6 QPs
    assert (kernel["dispatch_us"]["value"], kernel["combine_us"]["value"]) == (185.4, 258.2)
    assert kernel["total_us"]["value"] == pytest.approx(443.6) and kernel["total_us"]["tag"] == "derived"
    models = {m["name"]: m for m in clean(client.get("/api/models")).json()}
    shape = ("hidden", "layers", "experts", "topk")
    assert tuple(models["deepseek-v3"][k] for k in shape) == (7168, 61, 256, 8)
    assert tuple(models["qwen3-30b-a3b-fp8"][k] for k in shape) == (2048, 48, 128, 8)
    hbm = {i["name"]: i["hbm_gb"] for i in clean(client.get("/api/instances")).json()}
    assert (hbm["p5"], hbm["p5en"], hbm["p6-b200"]) == (80.0, 141.0, 180.0)


def test_an_uploaded_model_has_no_cli_command(client) -> None:  # noqa: F811
    """A preset's details name the CLI command that gives the same result; an upload has no
    name the CLI would know, so `cli` is null (`details_of` sees the `upload:` prefix)."""
    config = json.loads((HF / "deepseek-v3" / "config.json").read_text())
    details = post(client, "/api/details", {"config_json": config, "nodes": 4}).json()
    assert details["cli"] is None
    assert details["model"]["experts"] == 256  # the upload was evaluated all the same


def test_every_error_status_is_documented(client) -> None:  # noqa: F811
    spec = client.get("/openapi.json").json()
    for path in ("/api/evaluate", "/api/details", "/api/kernel"):
        responses = spec["paths"][path]["post"]["responses"]
        assert {"200", "400", "403", "413", "415", "422"} <= set(responses), path
        assert responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")


def test_lru_makes_each_key_once_and_evicts_the_least_recently_used() -> None:
    made: list[str] = []
    cache: LRU[str] = LRU(size=2)

    def maker(key: str):
        return lambda: made.append(key) or key.upper()

    assert cache.get_or_make("a", maker("a")) == "A"
    assert cache.get_or_make("b", maker("b")) == "B"
    assert cache.get_or_make("a", maker("a")) == "A"  # a hit: a is now the most recent
    assert made == ["a", "b"]
    cache.get_or_make("c", maker("c"))  # over size 2: b, the least recently used, goes
    cache.get_or_make("a", maker("a"))
    assert made == ["a", "b", "c"]
    cache.get_or_make("b", maker("b"))
    assert made == ["a", "b", "c", "b"]
    cache.clear()
    cache.get_or_make("b", maker("b"))
    assert made[-1] == "b" and len(made) == 5


def test_dumps_is_compact_json_that_takes_numpy_values() -> None:
    assert dumps({"a": np.float64(1.5), "b": np.arange(3), "c": None}) == b'{"a":1.5,"b":[0,1,2],"c":null}'
    assert json.loads(dumps({"x": [1, "y"]})) == {"x": [1, "y"]}


def test_result_for_runs_a_request_once_and_clear_caches_forgets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[EvaluateRequest] = []
    monkeypatch.setattr(api, "run", lambda req: runs.append(req) or evaluate(req.to_scenario()))
    api.clear_caches()
    req = EvaluateRequest(nodes=3, concurrency=24)
    first = api.result_for(req)
    assert api.result_for(EvaluateRequest(nodes=3, concurrency=24)) is first and len(runs) == 1
    api.clear_caches()
    api.result_for(req)
    assert len(runs) == 2
    api.clear_caches()


def test_api_takes_the_split_as_the_cli_does(client):  # noqa: F811
    body = {"model": "deepseek-v3", "disagg": "1P3D", "concurrency": 32}
    resp = client.post("/api/evaluate", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["disaggregated"]["layout"] == "1P3D"
    same = client.post(
        "/api/evaluate",
        json={"model": "deepseek-v3", "prefill_nodes": 1, "decode_nodes": 3, "concurrency": 32},
    )
    assert same.json()["disaggregated"] == resp.json()["disaggregated"]
    bad = client.post("/api/evaluate", json={"model": "deepseek-v3", "disagg": "0P3D"})
    assert bad.status_code == 422 and bad.json()["field"] == "disagg"
    page = client.get("/?model=deepseek-v3&disagg=1P3D")
    assert page.status_code == 200 and 'id="disagg-section">' in page.text


def test_the_api_answers_the_same_bounds(client) -> None:  # noqa: F811
    resp = client.post("/api/evaluate", json={})
    assert resp.status_code == 200
    body = resp.json()
    mine = evaluate(Scenario()).to_json()
    for name in mine["arms"]:
        for key in ("bound", "exchange_bound", "nic_busy_pct", "nic_busy_exchange_pct"):
            assert body["arms"][name][key] == json.loads(json.dumps(mine["arms"][name][key]))
