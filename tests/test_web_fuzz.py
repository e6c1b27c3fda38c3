"""Property-based fuzzing of the JSON API from its own OpenAPI spec (schemathesis).

Bounded (30 cases per operation, positive and negative, derandomised, in-process, no
network). The checks are named rather than left to the library's defaults, so an upgrade
cannot silently drop one: no 5xx, the documented status codes, content types, headers and
response schemas, and refusal of schema-invalid input. Every refusal must be the
`{error, field}` line, and every operation in `/openapi.json` must have been fuzzed.
"""

from __future__ import annotations

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
