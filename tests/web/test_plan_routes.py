"""The planner over HTTP (`web/plan_routes.py`): `/api/plan` answers the CLI's `plan --json`, a
bad body is one line naming its field, the `/plan` page renders the answer server-side from its
query string and never opens a path a field names; and the query and form helpers directly."""

from __future__ import annotations

import re

import pytest
from starlette.datastructures import QueryParams

from cli.commands.plan_question import BODY, cli_json  # noqa: F401  (fixture)
from deepep_calc.base.errors import InputError
from deepep_calc.web.plan_routes import _preset, body_from_query, page_values, request_of
from deepep_calc.web.plan_schemas import PlanRequestBody
from web_fixtures import app, client  # noqa: F401  (fixtures)


def test_api_plan_equals_the_cli_json(client, cli_json):  # noqa: F811
    resp = client.post("/api/plan", json=BODY)
    assert resp.status_code == 200, resp.text
    assert resp.json() == cli_json


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (dict(BODY, request_rate=2.0), "request_rate"),
        (dict(BODY, concurrency=None), "concurrency"),
        (dict(BODY, instances="p5,p7"), "instances"),
        (dict(BODY, max_nodes=65), "max_nodes"),
        (dict(BODY, model="../../etc/passwd"), "model"),
        (dict(BODY, concurrency="64"), "concurrency"),
        ({"concurrency": 4}, "model"),
        (dict(BODY, unknown=1), "unknown"),
    ],
)
def test_api_plan_bad_input_is_one_line_422(client, body, field):  # noqa: F811
    resp = client.post("/api/plan", json=body)
    assert resp.status_code == 422
    data = resp.json()
    assert set(data) == {"error", "field"} and data["field"] == field
    assert "\n" not in data["error"] and "Traceback" not in resp.text


def test_api_plan_takes_only_json(client):  # noqa: F811
    resp = client.post("/api/plan", content="model=deepseek-v3", headers={"content-type": "text/plain"})
    assert resp.status_code == 415


# The page --------------------------------------------------------------------------------------


def test_plan_page_renders_the_answer_server_side(client):  # noqa: F811
    resp = client.get(
        "/plan",
        params={
            **{k: str(v) for k, v in BODY.items() if k not in ("instances", "engines")},
            "instances": ["p5en", "p6-b200"],
            "engines": ["vllm", "sglang"],
        },
    )
    assert resp.status_code == 200
    assert "Cheapest meeting every target" in resp.text and 'id="plan-frontier"' in resp.text
    assert 'href="/?' in resp.text  # each configuration links to its card


def test_plan_page_without_a_question_and_with_a_bad_one(client):  # noqa: F811
    resp = client.get("/plan")
    assert resp.status_code == 200 and "No plan yet" in resp.text
    resp = client.get("/plan", params={"model": "deepseek-v3", "concurrency": "8", "max_nodes": "0"})
    assert resp.status_code == 422
    shown = re.search(r'data-error-for="max_nodes" role="alert">([^<]*)<', resp.text)
    assert shown and shown.group(1).startswith("--max-nodes: 0 is not allowed")
    resp = client.get("/plan", params={"model": "/etc/passwd", "concurrency": "8"})
    assert resp.status_code == 422 and "a preset" in resp.text


class _Opens:
    """Files opened while a call runs (an audit hook: it sees the app's own thread too)."""

    def __init__(self) -> None:
        import sys

        self.active, self.paths = False, []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        import os

        if self.active and event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            self.paths.append(os.fsdecode(args[0]))

    def __call__(self, call):
        self.paths, self.active = [], True
        try:
            return call(), self.paths
        finally:
            self.active = False


_OPENS = _Opens()


@pytest.mark.parametrize("field", ["model", "instances", "engines", "price_per_hour"])
def test_no_path_in_a_plan_field_is_opened(client, tmp_path, field):  # noqa: F811
    sentinel = tmp_path / "config.json"
    sentinel.write_text('{"model_type": "mixtral"}')
    query = {"model": "deepseek-v3", "concurrency": "4"}
    for value in [str(sentinel), str(tmp_path), f"file://{sentinel}", "/etc/passwd", f"{sentinel}\x00"]:
        for call in (
            lambda v=value: client.post("/api/plan", json=dict(BODY, **{field: v})),
            lambda v=value: client.get("/plan", params={**query, field: v}),
        ):
            resp, opened = _OPENS(call)
            assert resp.status_code == 422, (field, value, resp.text[:200])
            assert [p for p in opened if str(tmp_path) in p or p.startswith("/etc")] == []


def test_the_plan_page_speaks_the_forms_language_and_leaves_unpriced_instances_unticked(client):  # noqa: F811
    """Issue #26 item 8: a web user has no --price-per-hour; an instance with no price starts
    unticked (it cannot be costed until a price is typed)."""
    blank = client.get("/plan").text
    boxes = dict(re.findall(r'<input type="checkbox" name="instances" value="([^"]+)"( checked)?>', blank))
    assert boxes["p6-b300"] == "" and boxes["p5en"] == " checked"
    asked = client.get("/plan?model=deepseek-v3&concurrency=8&max_nodes=2").text
    assert "p6-b300" not in asked.split('id="plan-count"')[1].split("</p>")[0]  # not searched
    ticked = client.get("/plan?model=deepseek-v3&concurrency=8&max_nodes=2&instances=p5en&instances=p6-b300")
    text = ticked.text
    assert "--price-per-hour" not in text and "--measured-only" not in text
    assert "type a price for p6-b300 under Price per node-hour" in text
    # the JSON and the CLI keep the flag (its readers type commands)
    body = {"model": "deepseek-v3", "concurrency": 8, "max_nodes": 2, "instances": ["p5en", "p6-b300"]}
    reasons = client.post("/api/plan", json=body).json()["skipped_reasons"]
    assert any("--price-per-hour p6-b300=P" in r for r in reasons)


# The helpers -------------------------------------------------------------------------------------


def test_no_load_in_the_query_is_no_question_yet() -> None:
    assert body_from_query(QueryParams("model=deepseek-v3&isl=1024")) is None
    assert body_from_query(QueryParams("concurrency=&request_rate=")) is None


def test_the_query_is_read_as_the_plan_body() -> None:
    query = (
        "concurrency=8&isl=1024&request_rate=&instances=p5en&instances=p6-b200&instances=+"
        "&measured_only=on&price_kinds=ALL&price_per_hour=p5en%3D50"
    )
    assert body_from_query(QueryParams(query)) == PlanRequestBody(
        model="qwen3-30b-a3b-fp8",  # blank: the default scenario's model
        concurrency=8,
        isl=1024,
        instances="p5en,p6-b200",  # ticked boxes, blanks dropped
        measured_only=True,
        price_per_hour="p5en=50",
        price_kinds="all",
    )


def test_without_ticked_instances_the_priced_ones_are_searched() -> None:
    """The default instances are p5, p5en, p6-b200 and p6-b300; p6-b300 has no catalog price."""
    body = body_from_query(QueryParams("request_rate=2.5"))
    assert body is not None and (body.request_rate, body.instances) == (2.5, "p5,p5en,p6-b200")
    assert body.engines is None  # every engine


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("concurrency=8.5", "--concurrency: '8.5' is not allowed; expected a whole number"),
        ("concurrency=8&slo_tok_s=fast", "--slo-tok-s: 'fast' is not allowed; expected a number"),
    ],
)
def test_a_number_that_does_not_parse_is_refused_by_name(query: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        body_from_query(QueryParams(query))
    assert info.value.message == message


def test_the_form_shows_the_query_or_the_defaults() -> None:
    blank = page_values(QueryParams(""))
    assert (blank["isl"], blank["osl"], blank["concurrency"], blank["max_nodes"]) == (
        "120",
        "128",
        "32",
        "16",
    )
    assert blank["instances"] == ["p5", "p5en", "p6-b200"] and blank["engines"] == [
        "trtllm",
        "vllm",
        "sglang",
    ]
    assert blank["measured_only"] is False and blank["price_kinds"] is False
    rate = page_values(QueryParams("request_rate=3&max_nodes=4&engines=vllm&price_kinds=all"))
    assert rate["concurrency"] == "" and rate["request_rate"] == "3"  # a rate asked: no default concurrency
    assert (rate["max_nodes"], rate["engines"], rate["price_kinds"]) == ("4", ["vllm"], True)


def test_only_a_preset_is_planned_over_http() -> None:
    assert _preset(" DeepSeek-V3 ") == "deepseek-v3"
    with pytest.raises(InputError) as info:
        _preset("/etc/passwd")
    assert info.value.message.startswith("--model: '/etc/passwd' is not allowed; expected a preset (")


def test_request_of_is_the_planners_request_with_the_preset_named() -> None:
    req = request_of(PlanRequestBody(model="DeepSeek-V3", concurrency=4, max_nodes=2))
    assert req.model == "deepseek-v3"
    assert req.targets_json()["concurrency"] == 4 and req.space_json()["max_nodes"] == 2
