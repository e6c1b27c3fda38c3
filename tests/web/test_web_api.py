"""The JSON API and the pages through FastAPI's TestClient: contract, errors, limits."""

from __future__ import annotations

import json

import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.estimate.kernel import kernel_json, kernel_query
from deepep_calc.io.inputs import resolve_files
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.report.catalogs import instances_rows, models_rows, transports_rows
from deepep_calc.web.schemas import (
    DetailsResponse,
    EvaluateResponse,
    InstanceRow,
    KernelResponse,
    ModelRow,
    TransportRow,
)
from paths import TESTS
from web_fixtures import app, client, free_port  # noqa: F401  (fixtures)

HF = TESTS / "fixtures" / "hf"
LEAKS = ("Traceback", 'File "', "site-packages", "Error(")


def clean(resp):
    """Every response: no traceback or Python internals in the body."""
    for marker in LEAKS:
        assert marker not in resp.text, f"{marker!r} leaked into a {resp.status_code} response"
    return resp


def post(client, path, body=None, **kw):  # noqa: F811
    return clean(
        client.post(path, json=body, **kw) if body is not None or not kw else client.post(path, **kw)
    )


def error_of(resp, status=422):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error", "field"}
    assert "\n" not in body["error"]
    return body


def cli_message(**fields) -> str:
    """What the CLI prints (after 'deepep-calc: error: ') for the same scenario."""
    with pytest.raises(CalcError) as info:
        evaluate(Scenario(**fields))
    return info.value.message


def api_message(**fields) -> str:
    """The CLI's message as the API words it: the field by its JSON name, not its flag."""
    message = cli_message(**fields)
    flag, rest = message.split(":", 1)
    assert flag.startswith("--")
    return flag[2:].replace("-", "_") + ":" + rest


# /api/evaluate: the contract ---------------------------------------------------------------


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


def test_eager_is_the_cli_spelling_of_cuda_graphs(client):  # noqa: F811
    graphs = post(client, "/api/evaluate", {"cuda_graphs": True}).json()
    eager_false = post(client, "/api/evaluate", {"eager": False}).json()
    eager_true = post(client, "/api/evaluate", {"eager": True}).json()
    assert eager_false == graphs
    assert eager_true["scenario"]["cuda_graphs"] is False
    assert eager_true["arms"]["deepep"]["step_ms"] != graphs["arms"]["deepep"]["step_ms"]


def test_eager_contradicting_cuda_graphs_is_refused(client):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", {"eager": True, "cuda_graphs": True}))
    assert body["field"] == "cuda_graphs"


# /api/evaluate: bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"concurrency": -1}, "concurrency"),
        ({"nodes": 0}, "nodes"),
        ({"topk": 300}, "topk"),
        ({"transport": "ib-ibgda"}, "transport"),
        ({"instance": "p9"}, "instance"),
        ({"weight_dtype": "fp3"}, "weight_dtype"),
        ({"gpus_per_node": 16}, "gpus_per_node"),
    ],
)
def test_bad_values_give_the_cli_message_and_name_the_field(client, fields, field):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", fields))
    assert body["field"] == field
    assert body["error"] == api_message(**fields)


def test_unknown_preset_is_refused_with_the_choices(client):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", {"model": "gpt-7-moe"}))
    assert body["field"] == "model"
    assert body["error"].startswith("model: 'gpt-7-moe' is not allowed")
    assert "deepseek-v3" in body["error"]


def test_a_path_as_model_is_never_read(client):  # noqa: F811
    path = str(HF / "deepseek-v3" / "config.json")
    assert resolve_files(Scenario(model=path)).model.hidden == 7168  # the CLI would read it...
    body = error_of(post(client, "/api/evaluate", {"model": path}))  # ...the server does not
    assert body["field"] == "model"


def test_hf_id_of_a_preset_is_accepted(client):  # noqa: F811
    resp = post(client, "/api/evaluate", {"model": "deepseek-ai/DeepSeek-V3"})
    assert resp.status_code == 200
    assert resp.json()["scenario"]["model"] == "deepseek-v3"


def test_calibration_paths_are_refused_over_http(client):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", {"calibration": "/etc/passwd"}))
    assert body["field"] == "calibration"


@pytest.mark.parametrize(
    ("fields", "field", "expect"),
    [
        ({"concurrency": "lots"}, "concurrency", "whole number"),
        ({"nodes": 2.5}, "nodes", "whole number"),
        ({"alternative": "pipeline"}, "alternative", "allgather"),
        ({"bogus": 1}, "bogus", "known fields"),
        ({"slo_tok_s": "fast"}, "slo_tok_s", "number"),
    ],
)
def test_type_errors_are_one_line_and_name_the_field(client, fields, field, expect):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", fields))
    assert body["field"] == field
    assert expect in body["error"]


def test_body_that_is_not_an_object(client):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", [1, 2, 3]))
    assert body["field"] is None
    bad = clean(client.post("/api/evaluate", content=b"{nope", headers={"content-type": "application/json"}))
    assert error_of(bad)["field"] is None
    assert "not valid JSON" in bad.json()["error"]


# inline config.json ---------------------------------------------------------------------------


def test_inline_config_is_evaluated_in_memory(client):  # noqa: F811
    config = json.loads((HF / "qwen3-30b-a3b-fp8" / "config.json").read_text())
    as_object = post(client, "/api/evaluate", {"config_json": config, "nodes": 2})
    as_text = post(client, "/api/evaluate", {"config_json": json.dumps(config), "nodes": 2})
    assert as_object.status_code == as_text.status_code == 200
    assert as_object.json() == as_text.json()
    model = as_object.json()["scenario"]["model"]
    assert model.startswith("upload:")
    # the spec lived only for that request: the name does not resolve afterwards
    with pytest.raises(InputError):
        resolve(Scenario(model=model))


def test_inline_config_overrides_apply(client):  # noqa: F811
    config = json.loads((HF / "deepseek-v3" / "config.json").read_text())
    base = post(client, "/api/details", {"config_json": config}).json()["model"]
    wider = post(client, "/api/details", {"config_json": config, "experts": 512}).json()["model"]
    assert base["experts"] == 256 and wider["experts"] == 512


@pytest.mark.parametrize(
    ("config", "expect"),
    [
        ("{not json", "not valid JSON"),
        ({"hidden_size": 1024}, "model_type"),
        ({"model_type": "bert"}, "not a supported MoE family"),
        ("[1, 2]", "expected an object"),
    ],
)
def test_malformed_config_is_rejected_with_the_reason(client, config, expect):  # noqa: F811
    body = error_of(post(client, "/api/evaluate", {"config_json": config}))
    assert body["field"] == "config_json"
    assert expect in body["error"]
    assert body["error"].startswith("uploaded config.json")


# limits and content types ------------------------------------------------------------------------


def test_body_over_the_limit_is_413(client):  # noqa: F811
    big = json.dumps({"config_json": "x" * 300_000})
    resp = clean(client.post("/api/evaluate", content=big, headers={"content-type": "application/json"}))
    assert error_of(resp, 413)["error"].startswith("request body over")


def test_streamed_body_over_the_limit_is_413(client):  # noqa: F811
    def chunks():
        yield b'{"config_json": "'
        for _ in range(40):
            yield b"y" * 10_000
        yield b'"}'

    resp = clean(client.post("/api/evaluate", content=chunks(), headers={"content-type": "application/json"}))
    assert "content-length" not in {k.lower() for k in resp.request.headers}
    error_of(resp, 413)


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("/api/evaluate", "text/plain"),
        ("/api/evaluate", "application/x-www-form-urlencoded"),
        ("/api/kernel", "text/xml"),
        ("/", "application/json"),
    ],
)
def test_wrong_content_type_is_415(client, path, ctype):  # noqa: F811
    resp = clean(client.post(path, content=b"{}", headers={"content-type": ctype}))
    assert error_of(resp, 415)["field"] is None


def test_unexpected_errors_are_500_without_details(client, monkeypatch):  # noqa: F811
    from deepep_calc.web import api

    def boom(*_a, **_k):
        raise RuntimeError("secret internals /srv/x.py line 7")

    monkeypatch.setattr(api, "run", boom)
    api.clear_caches()
    resp = post(client, "/api/evaluate", {"nodes": 3})
    body = error_of(resp, 500)
    assert "secret" not in resp.text
    assert body["error"].startswith("internal error")
    api.clear_caches()


def test_unknown_route_is_a_json_404(client):  # noqa: F811
    body = error_of(clean(client.get("/api/nothing")), 404)
    assert "/api/nothing" in body["error"]


# the other endpoints ------------------------------------------------------------------------------


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


def test_openapi_documents_the_api_and_no_cdn_docs(client):  # noqa: F811
    spec = clean(client.get("/openapi.json")).json()
    assert {"/api/evaluate", "/api/models", "/api/instances", "/api/transports", "/api/kernel"} <= set(
        spec["paths"]
    )
    schemas = spec["components"]["schemas"]
    body = schemas["EvaluateRequest"]["properties"]
    for name in (
        "model",
        "instance",
        "nodes",
        "gpus_per_node",
        "engine",
        "eager",
        "cuda_graphs",
        "transport",
    ):
        assert name in body
    assert "config_json" in body
    assert "EvaluateResponse" in schemas
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN


# pages ---------------------------------------------------------------------------------------------


def test_page_renders_the_result_server_side(client):  # noqa: F811
    resp = clean(client.get("/", params={"model": "kimi-k2"}))
    assert resp.status_code == 200
    html = resp.text
    assert 'class="card card-capacity lit"' in html
    assert html.count(' lit"') == 1
    for section in ("§1", "§2", "§3", "§4", "§5"):
        assert section in html
    assert 'class="tag tag-measured"' in html or 'class="tag tag-derived"' in html
    assert "content-security-policy" in resp.headers


def test_page_field_error_sits_next_to_the_field(client):  # noqa: F811
    resp = clean(client.get("/", params={"concurrency": "-5"}))
    assert resp.status_code == 422
    message = api_message(concurrency=-5)
    assert f'data-error-for="concurrency" role="alert">{message}</p>'.replace("'", "&#39;") in resp.text


def test_form_post_without_javascript(client):  # noqa: F811
    data = {  # GPU-initiated EFA, CUDA graphs, DeepSeek scale, a batch past one node's KV: DeepEP wins
        "model": "deepseek-v3",
        "nodes": "2",
        "engine": "vllm",
        "transport": "efa-gda",
        "concurrency": "1024",
        "isl": "128",
        "osl": "1024",
        "cuda_graphs": "true",
    }
    resp = clean(client.post("/", data=data))
    assert resp.status_code == 200
    assert 'class="card card-deepep lit"' in resp.text
    bad = clean(client.post("/", data={**data, "nodes": "lots"}))
    assert bad.status_code == 422
    assert "nodes: &#39;lots&#39; is not allowed" in bad.text and "--nodes" not in bad.text


def test_form_upload_of_a_config(client):  # noqa: F811
    good = (HF / "mixtral-8x7b" / "config.json").read_bytes()
    resp = clean(
        client.post(
            "/", data={"nodes": "2"}, files={"config_file": ("config.json", good, "application/json")}
        )
    )
    assert resp.status_code == 200
    assert "mistralai/Mixtral-8x7B" in resp.text or "mixtral" in resp.text.lower()
    bad = clean(client.post("/", files={"config_file": ("config.json", b"\xff\xfe{", "application/json")}))
    assert bad.status_code == 422
    assert 'data-error-for="config_json" role="alert">uploaded config.json: is not UTF-8' in bad.text


def test_form_upload_over_5_mb_is_413(client):  # noqa: F811
    huge = b" " * (6 * 1024 * 1024)
    resp = clean(client.post("/", files={"config_file": ("config.json", huge, "application/json")}))
    assert resp.status_code == 413


def test_mechanism_page(client):  # noqa: F811
    resp = clean(client.get("/mechanism"))
    assert resp.status_code == 200
    html = resp.text
    assert html.count('<tr><th scope="row">') >= 8  # the RC vs SRD rows (and others)
    lanes = html.split('<g class="lane"')[1:]
    assert [lane.count('<g class="layer">') for lane in lanes] == [5, 2]
    assert "efa-native-cqpoll" in html and "391.6" in html and "338.5" in html
    assert ">2.2<" in html  # NIC utilisation, from the measured facts


def test_plotly_is_served_locally(client):  # noqa: F811
    resp = client.get("/static/plotly.min.js")
    assert resp.status_code == 200
    assert "javascript" in resp.headers["content-type"]
    assert len(resp.content) > 1_000_000


# the commands ---------------------------------------------------------------------------------------


def test_serve_prints_the_url_and_warns_off_loopback(monkeypatch, capsys):
    import uvicorn

    from deepep_calc.cli import main

    calls = []

    def record(server, sockets=None):  # nothing is served; the socket was bound beforehand
        c = server.config
        calls.append((c.log_level, c.timeout_graceful_shutdown, [s.getsockname()[:2] for s in sockets]))

    monkeypatch.setattr(uvicorn.Server, "run", record)
    port = free_port()
    main(["serve", "--port", str(port)])
    out = capsys.readouterr()
    assert out.out.strip() == f"deepep-calc: serving on http://127.0.0.1:{port}/  (Ctrl-C to stop)"
    assert out.err == ""
    assert calls == [("warning", 10, [("127.0.0.1", port)])]
    main(["serve", "--host", "0.0.0.0", "--port", str(free_port())])
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.0.0" in err
    with pytest.raises(SystemExit) as info:
        main(["serve", "--port", "70000"])
    assert info.value.code == 2


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("10.1.2.3", False), ("example.org", False)],
)  # fmt: skip
def test_loopback_detection(host, loopback):
    from deepep_calc.cli.commands.web import is_loopback

    assert is_loopback(host) is loopback


def test_wrong_method_is_405_with_allow(client):  # noqa: F811
    resp = clean(client.post("/api/models", content=b"x", headers={"content-type": "text/plain"}))
    assert error_of(resp, 405)["field"] is None
    assert resp.headers["allow"] == "GET"


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
    kernel = post(client, "/api/kernel", {}).json()
    assert (kernel["dispatch_us"]["value"], kernel["combine_us"]["value"]) == (185.4, 258.2)
    assert kernel["total_us"]["value"] == pytest.approx(443.6) and kernel["total_us"]["tag"] == "derived"
    models = {m["name"]: m for m in clean(client.get("/api/models")).json()}
    shape = ("hidden", "layers", "experts", "topk")
    assert tuple(models["deepseek-v3"][k] for k in shape) == (7168, 61, 256, 8)
    assert tuple(models["qwen3-30b-a3b-fp8"][k] for k in shape) == (2048, 48, 128, 8)
    hbm = {i["name"]: i["hbm_gb"] for i in clean(client.get("/api/instances")).json()}
    assert (hbm["p5"], hbm["p5en"], hbm["p6-b200"]) == (80.0, 141.0, 180.0)
