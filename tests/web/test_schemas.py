"""The API's request and response models (`web/schemas.py`): the `/api/evaluate` body is the
CLI's scenario plus `eager`, `disagg` and an inline config.json; its validators fold those into
the scenario; `/openapi.json` states the limits the server enforces. (Real responses validating
against the response models is checked where each route is, in `test_api.py`.)"""

from __future__ import annotations

import inspect
from typing import get_args

import pytest
from pydantic import ValidationError

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.estimate.kernel import LIMITS as KERNEL_LIMITS
from deepep_calc.estimate.kernel import kernel_query
from deepep_calc.question.fields import FLOAT_LIMIT, LIMITS, OVERRIDE_LIMIT
from deepep_calc.question.scenario import Scenario
from deepep_calc.web.schemas import EvaluateRequest, KernelRequest, QOut, Tag
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import error_of, post


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


def test_the_body_is_the_scenario_and_three_web_fields() -> None:
    assert set(EvaluateRequest.model_fields) == set(Scenario.field_names()) | {
        "eager",
        "disagg",
        "config_json",
    }
    assert EvaluateRequest().to_scenario() == Scenario()  # omitted = the CLI's default


def test_to_scenario_leaves_the_web_fields_out_and_takes_updates() -> None:
    req = EvaluateRequest.model_validate({"disagg": "1P3D", "eager": False, "config_json": {"a": 1}})
    assert req.to_scenario(model="upload:x") == Scenario(
        model="upload:x", cuda_graphs=True, prefill_nodes=1, decode_nodes=3
    )


@pytest.mark.parametrize(
    ("body", "graphs"),
    [
        ({"eager": True, "cuda_graphs": False}, False),  # both sent, and they agree
        ({"eager": False, "cuda_graphs": True}, True),
        ({"eager": None, "cuda_graphs": True}, True),  # a null eager is not sent
    ],
)
def test_eager_and_cuda_graphs_may_both_be_sent_when_they_agree(body: dict, graphs: bool) -> None:
    assert EvaluateRequest.model_validate(body).cuda_graphs is graphs


def test_eager_must_be_a_boolean() -> None:
    with pytest.raises(InputError) as info:
        EvaluateRequest.model_validate({"eager": "yes"})
    assert info.value.message == "--eager: 'yes' is not allowed; expected true or false"


@pytest.mark.parametrize(
    ("body", "sides"),
    [
        ({"disagg": "1P3D"}, (1, 3)),
        ({"disagg": "2P6D", "nodes": 8}, (2, 6)),  # a nodes that is P + D may be sent beside it
        ({"disagg": "1P3D", "prefill_nodes": 1}, (1, 3)),  # and a side count that agrees
        ({"prefill_nodes": 1, "decode_nodes": 2}, (1, 2)),
    ],
)
def test_a_split_sets_the_side_counts(body: dict, sides: tuple[int, int]) -> None:
    req = EvaluateRequest.model_validate(body)
    assert (req.prefill_nodes, req.decode_nodes) == sides


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"disagg": "1P3D", "nodes": 5},
            "--nodes: 5 is not allowed; expected 4 = P + D for a 1P3D split (or leave nodes out)",
        ),
        (
            {"prefill_nodes": 1, "decode_nodes": 2, "nodes": 5},
            "--nodes: 5 is not allowed; expected 3 = P + D for a 1P2D split (or leave nodes out)",
        ),
        (
            {"disagg": "1P3D", "prefill_nodes": 2},
            "--prefill-nodes: 2 is not allowed; expected 1, as disagg 1P3D says",
        ),
        (
            {"disagg": "1P3D", "decode_nodes": 1},
            "--decode-nodes: 1 is not allowed; expected 3, as disagg 1P3D says",
        ),
    ],
)
def test_a_split_that_contradicts_a_count_is_refused(body: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        EvaluateRequest.model_validate(body)
    assert info.value.message == message


def test_a_split_refused_over_http_names_the_field(client) -> None:  # noqa: F811
    assert error_of(post(client, "/api/evaluate", {"disagg": "1P3D", "nodes": 5}))["field"] == "nodes"
    assert error_of(post(client, "/api/evaluate", {"disagg": "bad"}))["field"] == "disagg"


def test_the_openapi_schema_states_the_limits_the_server_enforces() -> None:
    props = EvaluateRequest.model_json_schema()["properties"]
    assert (props["nodes"]["minimum"], props["nodes"]["maximum"]) == (1, LIMITS["nodes"])
    assert props["concurrency"]["maximum"] == LIMITS["concurrency"]
    topk = next(b for b in props["topk"]["anyOf"] if b["type"] == "integer")
    assert (topk["minimum"], topk["maximum"]) == (1, OVERRIDE_LIMIT)
    # GPUs per node: at most the largest instance's count (8 today), below the scenario limit of 72
    gpus = next(b for b in props["gpus_per_node"]["anyOf"] if b["type"] == "integer")
    assert gpus["maximum"] == max(i.gpus_per_node for i in load_instances().values()) == 8
    slo = next(b for b in props["slo_tok_s"]["anyOf"] if b["type"] == "number")
    assert (slo["exclusiveMinimum"], slo["maximum"]) == (0, FLOAT_LIMIT)
    assert props["model"]["minLength"] == 1
    assert props["calibration"]["type"] == "null"  # the server reads no files
    branches = {b["type"]: b for b in props["config_json"]["anyOf"]}
    assert branches["object"]["minProperties"] == 1 and branches["string"]["minLength"] == 1


def test_the_kernel_schema_states_the_kernel_limits() -> None:
    props = KernelRequest.model_json_schema()["properties"]
    for name, limit in KERNEL_LIMITS.items():
        assert (props[name]["minimum"], props[name]["maximum"]) == (1, limit), name
    assert props["transport"]["minLength"] == props["instance"]["minLength"] == 1


def test_kernel_request_is_strict() -> None:
    with pytest.raises(ValidationError):
        KernelRequest.model_validate({"ep": "16"})
    with pytest.raises(ValidationError):
        KernelRequest.model_validate({"qp": 2})  # an unknown field


def test_kernel_request_defaults_are_the_clis() -> None:
    """`POST /api/kernel {}` asks what `deepep-calc kernel` asks with no options."""
    defaults = {
        name: p.default
        for name, p in inspect.signature(kernel_query).parameters.items()
        if name in KernelRequest.model_fields
    }
    assert KernelRequest().model_dump() == defaults


def test_a_figure_is_tagged_measured_derived_or_assumed() -> None:
    assert set(get_args(Tag)) == {"measured", "derived", "assumed"}
    QOut(value=1.0, unit="ms", tag="derived", source="x")
    with pytest.raises(ValidationError):
        QOut(value=1.0, unit="ms", tag="guessed", source="x")
    with pytest.raises(ValidationError):
        QOut(value=1.0, unit="ms", tag="derived", source="x", extra=1)


def test_a_refusal_raised_in_a_validator_is_the_cli_line_not_pydantics() -> None:
    """The validators raise the CLI's InputError, which pydantic lets through as it is."""
    with pytest.raises(CalcError) as info:
        EvaluateRequest.model_validate({"eager": True, "cuda_graphs": True})
    assert (
        info.value.message
        == "--cuda-graphs: true is not allowed; expected false when eager is true (send only one of the two)"
    )


def test_the_api_body_is_generated_from_the_scenario_fields() -> None:
    """One declaration: the web API's body has Scenario's fields, defaults and descriptions."""
    import dataclasses

    from deepep_calc.web.schemas import WEB_WORDS, EvaluateRequest, ScenarioBody

    for f in dataclasses.fields(Scenario):
        info = ScenarioBody.model_fields[f.name]
        assert info.default == f.default, f.name
        assert info.description == WEB_WORDS.get(f.name, f.metadata.get("description")), f.name
    # the one difference: the server reads no file, so its model is a preset, never a path
    assert "path" in Scenario.__dataclass_fields__["model"].metadata["description"]
    assert "path" not in ScenarioBody.model_fields["model"].description
    assert tuple(ScenarioBody.model_fields) == Scenario.field_names()
    assert set(EvaluateRequest.model_fields) == {*Scenario.field_names(), "eager", "config_json", "disagg"}
    body = EvaluateRequest(nodes=4, slo_tok_s=12.5).to_scenario()
    assert isinstance(body, Scenario) and body == Scenario(nodes=4, slo_tok_s=12.5)
