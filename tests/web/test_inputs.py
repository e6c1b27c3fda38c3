"""From what a browser sends to a scenario (`web/inputs.py`): JSON bodies, form fields and links
become one request; a refusal is the CLI's line with JSON field names in place of flags and
names the input to fix; a model is a preset or an inline config.json, never a path the
server would read.

The first tests go through the API (TestClient); the rest call the functions directly.
"""

from __future__ import annotations

import json

import pytest

from deepep_calc.base.errors import CalcError, FileInputError, InputError
from deepep_calc.io.inputs import resolve_files
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.web import inputs
from deepep_calc.web.inputs import (
    UPLOAD_PREFIX,
    cache_key,
    input_name,
    json_field,
    parse_config,
    prepare,
    request_from_form,
    request_from_json,
)
from one_line import assert_one_line
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import HF, api_message, clean, error_of, post

# Through the API ----------------------------------------------------------------------------------


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


BAD_BODIES = [
    ({"nodes": -1}, "nodes"),
    ({"nodes": "x"}, "nodes"),
    ({"max_qps": 0}, "max_qps"),
    ({"gpus_per_node": 99}, "gpus_per_node"),
    ({"instance": "zz"}, "instance"),
    ({"topk": 999}, "topk"),
    ({"weight_dtype": "fp3"}, "weight_dtype"),
    ({"transport": "efa-gda", "instance": "p5"}, "transport"),
    ({"price_per_hour": -5.0}, "price_per_hour"),
    ({"eager": 1}, "eager"),
]


@pytest.mark.parametrize(("body", "name"), BAD_BODIES, ids=[n for _, n in BAD_BODIES])
def test_api_errors_name_json_fields_not_flags(body: dict, name: str) -> None:
    from fastapi.testclient import TestClient

    from deepep_calc.web.app import create_app

    with TestClient(create_app()) as client:  # noqa: F811  (its own app, not the module's)
        resp = client.post("/api/evaluate", json=body)
    assert resp.status_code == 422
    message = resp.json()["error"]
    outside_backticks = message.split("`")[::2]
    assert not any("--" in part for part in outside_backticks), message
    assert message.startswith(f"{name}: "), message


# The functions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("err", "name"),
    [
        (InputError("--max-qps", 0, "x"), "max_qps"),
        (InputError("--eager", 1, "x"), "cuda_graphs"),  # the page has one graph-mode input
        (InputError("config_json", 1, "x"), "config_json"),  # already a field name
        (CalcError("no input named"), None),
    ],
)
def test_input_name_is_the_page_input_an_error_is_about(err: CalcError, name: str | None) -> None:
    assert input_name(err) == name


def test_json_field_spells_a_flag_as_its_json_field() -> None:
    assert json_field("--max-qps") == "max_qps"
    assert json_field("--eager") == "eager"  # the API takes eager beside cuda_graphs
    assert json_field("nodes") == "nodes"


def test_api_message_renames_flags_outside_backticks_only() -> None:
    err = InputError("--nodes", 0, "a number; run `deepep-calc evaluate --nodes 2`")
    assert (
        inputs.api_message(err)
        == "nodes: 0 is not allowed; expected a number; run `deepep-calc evaluate --nodes 2`"
    )
    # a flag is a `--` that starts a word: `x--y` and a trailing `a--` are not flags
    assert inputs.api_message(CalcError("--max-qps with --cuda-graphs; x--y and a-- stay")) == (
        "max_qps with cuda_graphs; x--y and a-- stay"
    )


def test_a_form_is_text_and_blank_means_the_default() -> None:
    form = {
        "nodes": " 4 ",
        "slo_tok_s": "2.5",
        "model": " deepseek-v3 ",
        "cuda_graphs": "TRUE",
        "prefill_cuda_graphs": "no",
        "isl": "",  # blank: the default
        "disagg": "  ",
    }
    req = request_from_form(form)
    assert (req.nodes, req.slo_tok_s, req.model, req.isl) == (4, 2.5, "deepseek-v3", 120)
    assert req.cuda_graphs is True and req.prefill_cuda_graphs is False
    assert req.decode_cuda_graphs is None and req.disagg is None  # blank: as the decode mode, aggregated
    assert request_from_form({}) == request_from_json({"cuda_graphs": False})  # an empty form: the default


def test_eager_in_a_link_overrides_the_graph_box() -> None:
    """`eager` is the CLI's spelling, as in a hand-written link: true means no CUDA graphs."""
    assert request_from_form({"cuda_graphs": "true", "eager": "true"}).cuda_graphs is False
    assert request_from_form({"eager": "off"}).cuda_graphs is True


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"nodes": "4.5"}, "--nodes: '4.5' is not allowed; expected a whole number greater than 0"),
        ({"slo_tok_s": "fast"}, "--slo-tok-s: 'fast' is not allowed; expected a number greater than 0"),
    ],
)
def test_a_form_number_that_does_not_parse_is_refused_by_name(form: dict[str, str], message: str) -> None:
    with pytest.raises(InputError) as info:
        request_from_form(form)
    assert info.value.message == message
    assert input_name(info.value) == next(iter(form))


def test_an_uploaded_file_wins_over_pasted_text() -> None:
    assert request_from_form({"config_text": '{"a": 1}'}, upload='{"b": 2}').config_json == '{"b": 2}'
    assert request_from_form({"config_text": '{"a": 1}'}, upload="  ").config_json == '{"a": 1}'
    assert request_from_form({"config_text": " "}).config_json is None


@pytest.mark.parametrize(
    ("data", "message", "field"),
    [
        (
            {"alternative": "pipeline"},
            "--alternative: 'pipeline' is not allowed; expected one of 'allgather' or 'tp'",
            "alternative",
        ),
        ({"nodes": "4"}, "--nodes: '4' is not allowed; expected a whole number greater than 0", "nodes"),
        ({"model": 5}, "--model: 5 is not allowed; expected text", "model"),
        ({"cuda_graphs": 0}, "--cuda-graphs: 0 is not allowed; expected true or false", "cuda_graphs"),
        ({"eager": 1}, "--eager: 1 is not allowed; expected true or false", "cuda_graphs"),
        ("x", "the request body must be a JSON object of scenario fields", None),
    ],
)
def test_a_body_pydantic_refuses_is_the_cli_line(data, message: str, field: str | None) -> None:
    """Strict types: a number in a string or 0 for false is refused, never coerced."""
    with pytest.raises(CalcError) as info:
        request_from_json(data)
    assert info.value.message == message
    assert input_name(info.value) == field


@pytest.mark.parametrize("config", [5, [1, 2]])
def test_a_config_of_the_wrong_type_names_config_json(config) -> None:
    with pytest.raises(CalcError) as info:
        request_from_json({"config_json": config})
    assert input_name(info.value) == "config_json"
    assert_one_line(info.value, "config_json:", "is not allowed; expected a config.json object, or its text")


def test_an_inline_config_is_keyed_by_its_content() -> None:
    """The key is a digest of the parsed JSON with sorted keys: the object, its text and its keys
    in another order are one model; another config is another."""
    config = json.loads((HF / "mixtral-8x7b" / "config.json").read_text())
    key, spec = parse_config(config)
    assert key.startswith(UPLOAD_PREFIX) and len(key) == len(UPLOAD_PREFIX) + 12
    assert parse_config(json.dumps(config, indent=4))[0] == key
    assert parse_config(dict(reversed(list(config.items()))))[0] == key
    assert parse_config({**config, "num_local_experts": 16})[0] != key
    assert (spec.name, spec.experts, spec.topk) == ("uploaded model", 8, 2)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("x" * (5 * 1024 * 1024 + 1), "uploaded config.json: is larger than 5 MB; refused"),
        ("[" * 100_000, "uploaded config.json: is not valid JSON (RecursionError)"),
        (
            {"model_type": "mixtral", "hidden_size": 4096},
            "uploaded config.json: missing field 'num_hidden_layers' (mixtral)",
        ),
    ],
)
def test_a_bad_config_is_refused_on_the_config_input(config, message: str) -> None:
    """Every refusal of the upload names `config_json`, even one the model reader raised with
    the key it missed as its field."""
    with pytest.raises(FileInputError) as info:
        parse_config(config)
    assert info.value.message == message
    assert info.value.field == "config_json"


def test_prepare_names_a_preset_or_an_upload_and_never_a_profile() -> None:
    scenario, models = prepare(request_from_json({"model": "deepseek-ai/DeepSeek-V3", "nodes": 4}))
    assert (scenario.model, scenario.nodes, models) == ("deepseek-v3", 4, {})
    config = json.loads((HF / "mixtral-8x7b" / "config.json").read_text())
    scenario, models = prepare(request_from_json({"config_json": config}))
    assert list(models) == [scenario.model] and scenario.model.startswith(UPLOAD_PREFIX)
    with pytest.raises(InputError) as info:
        prepare(request_from_json({"calibration": "p.toml"}))
    assert info.value.message.startswith("--calibration: 'p.toml' is not allowed; expected nothing over HTTP")


def test_cache_key_is_a_digest_of_the_whole_request() -> None:
    """Two requests that evaluate alike share a key, the default spelled out included (the
    default nodes is 2); any difference, an inline config's content too, gives another."""
    key = cache_key(request_from_json({}))
    assert len(key) == 64 and int(key, 16) >= 0  # a SHA-256 in hex
    assert cache_key(request_from_json({"nodes": 2})) == key
    assert cache_key(request_from_json({"nodes": 3})) != key
    assert cache_key(request_from_json({"config_json": '{"a": 1}'})) != cache_key(
        request_from_json({"config_json": '{"a": 2}'})
    )


def test_a_limit_of_the_schema_is_said_as_the_cli_says_it() -> None:
    """pydantic's "Input should be less than or equal to 64" becomes "at most 64", and the lower
    bound "at least 1": the same words as the CLI's own limits."""
    from pydantic import ValidationError

    from deepep_calc.web.inputs import from_validation
    from deepep_calc.web.plan_schemas import WEB_MAX_NODES, PlanRequestBody

    for nodes, wanted in ((WEB_MAX_NODES + 1, f"at most {WEB_MAX_NODES}"), (0, "at least 1")):
        with pytest.raises(ValidationError) as info:
            PlanRequestBody.model_validate({"model": "deepseek-v3", "max_nodes": nodes})
        err = from_validation(info.value)
        assert err.message == f"--max-nodes: {nodes} is not allowed; expected {wanted}"
