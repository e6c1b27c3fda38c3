"""Property-based fuzzing of the JSON API from its own OpenAPI spec (schemathesis).

Bounded (30 cases per operation, positive and negative, derandomised, in-process, no
network). The checks are named rather than left to the library's defaults, so an upgrade
cannot silently drop one: no 5xx, the documented status codes, content types, headers and
response schemas, and refusal of schema-invalid input. Every refusal must be the
`{error, field}` line, and every operation in `/openapi.json` must have been fuzzed.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from deepep_calc.web.app import create_app

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
FUZZED: set[str] = set()  # operations the parametrised test below ran


def spec_operations() -> set[str]:
    """`METHOD /path` of every operation the app publishes, read from the spec itself."""
    from fastapi.testclient import TestClient

    with TestClient(create_app()) as client:
        spec = client.get("/openapi.json").json()
    verbs = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
    return {f"{m.upper()} {path}" for path, item in spec["paths"].items() for m in item if m in verbs}


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_and_never_fails(case):
    # The schema states types; ranges and cross-field rules (topk <= experts, a transport
    # available on the instance, a parseable config.json) are the model's to refuse with the
    # CLI's message, so a schema-valid request may rightly get a 422 (hence no
    # positive_data_acceptance check).
    FUZZED.add(case.operation.label)
    resp = case.call_and_validate(checks=CHECKS)
    assert resp.status_code < 500, resp.text
    assert "Traceback" not in resp.text
    if resp.status_code >= 400:
        assert set(resp.json()) == {"error", "field"}


def test_every_operation_in_the_spec_was_fuzzed(request):
    ops = spec_operations()
    assert len(ops) >= 6  # evaluate, details, kernel and the three catalogs at least
    assert {op.ok().label for op in schema.get_all_operations()} == ops
    fuzz_ids = [i for i in request.session.items if i.originalname == "test_api_conforms_and_never_fails"]
    if len(fuzz_ids) != len(ops):
        pytest.skip("the fuzz test was deselected or split; run the whole module to check coverage")
    assert {i.name.split("[", 1)[1].rstrip("]") for i in fuzz_ids} == ops  # one fuzz test per operation
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # in one process they ran before this one
        assert ops == FUZZED


def test_the_checks_catch_a_response_off_its_schema(monkeypatch):
    """The checks have teeth: catalog rows missing their fields fail response_schema_conformance."""
    from deepep_calc.report import catalogs

    monkeypatch.setattr(catalogs, "models_rows", lambda: [{"name": "x"}])
    case = schema["/api/models"]["GET"].Case()
    with pytest.raises(BaseExceptionGroup) as info:
        case.call_and_validate(checks=CHECKS)
    failures = info.value.exceptions
    assert [type(f).__name__ for f in failures] == ["JsonSchemaError"]
    assert "violates schema" in str(failures[0])


# the limits in the schema are the limits the server enforces ----------------------------------------


def _spec() -> dict:
    from fastapi.testclient import TestClient

    with TestClient(create_app()) as client:
        return client.get("/openapi.json").json()


def _bounded_fields() -> list[tuple[str, str, str, float, float]]:
    """(path, field, JSON type, minimum, maximum) of every request field the schema bounds."""
    spec = _spec()
    out = []
    for path, schema_name in (("/api/evaluate", "EvaluateRequest"), ("/api/kernel", "KernelRequest")):
        for name, prop in spec["components"]["schemas"][schema_name]["properties"].items():
            for branch in [prop, *prop.get("anyOf", [])]:
                if branch.get("type") in ("integer", "number") and "maximum" in branch:
                    low = branch.get("minimum", branch.get("exclusiveMinimum"))
                    high = branch["maximum"]
                    if branch["type"] == "integer":  # FastAPI writes the bounds as JSON floats
                        low, high = int(low), int(high)
                    out.append((path, name, branch["type"], low, high))
    return out


BOUNDED = _bounded_fields()


def test_every_numeric_request_field_is_bounded_in_the_schema():
    names = {(p, n) for p, n, *_ in BOUNDED}
    assert ("/api/evaluate", "nodes") in names and ("/api/evaluate", "slo_tok_s") in names
    assert ("/api/kernel", "ep") in names and ("/api/evaluate", "experts") in names
    assert len(names) >= 20


# Rules between fields the schema cannot state: at the bound, the field's partner is set too,
# or the refusal must name that rule: moe_layers is bounded by the chosen model's layer count,
# ISL and OSL together by its context window (the schema's bound is the tool's, not the model's).
PARTNERS = {"topk": "experts"}
CROSS_FIELD = {
    "moe_layers": "at most the layer count",
    "isl": "the context window of",
    "osl": "the context window of",
}


@pytest.mark.parametrize(("path", "name", "kind", "low", "high"), BOUNDED, ids=lambda v: str(v))
def test_schema_limits_are_the_servers(path, name, kind, low, high):
    """At each bound the field itself is accepted; one step outside it is refused, naming it.

    (A value inside the bounds may still be refused for another reason, a cross-field rule
    such as the memory of the arms; that refusal then names another field.)
    """
    from fastapi.testclient import TestClient

    step = 1 if kind == "integer" else high * 9
    inside = [high] if kind == "number" else [low, high]
    outside = [low - 1 if kind == "integer" else low, high + step]
    with TestClient(create_app()) as client:
        for value in inside:
            body = {name: value, **({PARTNERS[name]: value} if name in PARTNERS else {})}
            resp = client.post(path, json=body)
            if resp.status_code != 200 and resp.json()["field"] == name:
                assert name in CROSS_FIELD and CROSS_FIELD[name] in resp.json()["error"], (value, resp.json())
        for value in outside:
            resp = client.post(path, json={name: value})
            assert resp.status_code == 422, (value, resp.text)
            assert resp.json()["field"] == name, (value, resp.json())


@pytest.mark.parametrize(
    ("body", "field"), [({"config_json": ""}, "config_json"), ({"calibration": "p.toml"}, "calibration")]
)
def test_values_the_schema_excludes_are_refused(body, field):
    from fastapi.testclient import TestClient

    props = _spec()["components"]["schemas"]["EvaluateRequest"]["properties"]
    assert props["calibration"]["type"] == "null"
    assert {"type": "string", "minLength": 1} in props["config_json"]["anyOf"]
    with TestClient(create_app()) as client:
        resp = client.post("/api/evaluate", json=body)
    assert resp.status_code == 422 and resp.json()["field"] == field
