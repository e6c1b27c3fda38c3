"""The `/api/plan` body and response models (`web/plan_schemas.py`): a real answer validates
against the documented response, and the body is `deepep-calc plan`'s flags with the web's own
bounds (a preset always named, at most 64 nodes, strict types)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cli.commands.plan_question import BODY
from deepep_calc.cli.commands.plan import plan_cmd
from deepep_calc.web.plan_schemas import WEB_MAX_NODES, PlanRequestBody
from web_fixtures import app, client  # noqa: F401  (fixtures)


def test_api_plan_response_matches_its_schema(client):  # noqa: F811
    from deepep_calc.web.plan_schemas import PlanResponse

    resp = client.post("/api/plan", json=dict(BODY, slo_tok_s=1e6))
    assert resp.status_code == 200
    PlanResponse.model_validate(resp.json())
    assert resp.json()["best"] is None and resp.json()["nearest_misses"]


def test_the_body_defaults_are_the_clis_but_the_model_is_required() -> None:
    """isl, osl, max_nodes and layouts default as `deepep-calc plan` does; the CLI's --model
    has a default, the body none, so a client always says which model it plans."""
    cli = {p.name: p.default for p in plan_cmd.params}
    body = PlanRequestBody(model="deepseek-v3", concurrency=1)
    for name in ("isl", "osl", "max_nodes", "layouts"):
        assert getattr(body, name) == cli[name], name
    with pytest.raises(ValidationError) as info:
        PlanRequestBody.model_validate({"concurrency": 1})
    assert info.value.errors()[0]["loc"] == ("model",)


def test_every_body_field_is_a_plan_flag() -> None:
    flags = {p.name for p in plan_cmd.params} - {"as_json", "html_path"}
    assert set(PlanRequestBody.model_fields) == flags


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"max_nodes": WEB_MAX_NODES + 1}, "max_nodes"),  # 64 over the web
        ({"max_nodes": 0}, "max_nodes"),
        ({"isl": 0}, "isl"),
        ({"request_rate": 0.0}, "request_rate"),
        ({"concurrency": "64"}, "concurrency"),  # strict: no number in a string
        ({"layouts": "both"}, "layouts"),
    ],
)
def test_the_body_refuses_what_the_web_does_not_plan(change: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        PlanRequestBody.model_validate({**BODY, **change})
    assert info.value.errors()[0]["loc"][0] == field


def test_lists_may_be_sent_as_lists_or_comma_text() -> None:
    assert PlanRequestBody.model_validate({**BODY, "instances": ["p5en", "p5"]}).instances == ["p5en", "p5"]
    assert PlanRequestBody.model_validate(BODY).instances == "p5en,p6-b200"
    assert PlanRequestBody.model_validate({**BODY, "max_nodes": WEB_MAX_NODES}).max_nodes == 64
