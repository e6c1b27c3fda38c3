"""The planner over HTTP: `POST /api/plan` (the CLI's `plan --json`) and the `/plan` page.

The page is a GET form: it works with JavaScript off (the server renders the answer, the
frontier table and the misses), and with JavaScript on its script only draws the chart the
server built and opens a point's card on click. Both go through `plan.plan_request`, so a
bad input gets the CLI's one line, and through one cache, since a plan takes a fraction of a
second to a few seconds and a page is often reloaded with the same question. The handlers are
plain functions, so FastAPI runs them in its thread pool: a plan in progress never holds up
the event loop that answers every other request.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..base.errors import CalcError, InputError
from ..base.vocabulary import TRUE_WORDS, flag_of
from ..catalog.engines import load_engines
from ..catalog.hardware import load_instances
from ..catalog.model_catalog import preset_names
from ..question.fields import DEFAULTS
from ..report import view
from ..whatif.plan import MEASURED_ONLY
from ..whatif.plan.search import Plan, default_engines, default_instances, plan_request, run_plan
from .api import ERRORS, LRU, dumps
from .inputs import input_name
from .plan_schemas import WEB_MAX_NODES, PlanRequestBody, PlanResponse

api_router = APIRouter(prefix="/api", tags=["api"])
page_router = APIRouter(include_in_schema=False)

PLANS: LRU[Plan] = LRU(16)
PLAN_JSON: LRU[bytes] = LRU(64)

NUMBER_FIELDS = {
    "isl": int,
    "osl": int,
    "concurrency": int,
    "request_rate": float,
    "slo_tok_s": float,
    "ttft_ms": float,
    "budget_per_hour": float,
    "max_nodes": int,
    "max_batch": int,
}
# (name, label, help) of the page's number inputs, in order
PAGE_FIELDS = [
    ("isl", "Input length (ISL)", "prompt tokens"),
    ("osl", "Output length (OSL)", "generated tokens"),
    ("concurrency", "Concurrency", "requests in flight; or give a rate"),
    ("request_rate", "Request rate", "requests per second (Little's law)"),
    ("slo_tok_s", "Per-user floor", "tok/s each user must see"),
    ("ttft_ms", "TTFT ceiling", "ms to the first token"),
    ("budget_per_hour", "Budget", "$ per hour, whole deployment"),
    ("max_nodes", "Most nodes", f"1 to {WEB_MAX_NODES}"),
    ("max_batch", "Batch per rank", "blank = each engine's default"),
]


def _preset(model: str) -> str:
    """Only presets over HTTP: a path is never read."""
    names = preset_names()
    if model.strip().lower() in names:
        return model.strip().lower()
    raise InputError("--model", model, f"a preset ({', '.join(names)})")


def request_of(body: PlanRequestBody) -> Any:
    """The planner's request for a checked body (the body's schema holds the web's node limit)."""
    fields = body.model_dump()
    fields["model"] = _preset(fields["model"])
    return plan_request(**fields)  # no read_model: the server reads no file, so a path stays refused


def _key(req: Any) -> str:
    return json.dumps([req.targets_json(), req.space_json()], sort_keys=True)


def plan_for(req: Any) -> Plan:
    return PLANS.get_or_make(_key(req), lambda: run_plan(req))


@api_router.post(
    "/plan",
    summary="The cheapest configuration meeting the targets, and the frontier (the CLI's `plan --json`)",
    responses={200: {"model": PlanResponse}, **ERRORS},
    response_class=Response,
)
def api_plan(body: PlanRequestBody) -> Response:
    req = request_of(body)
    data = PLAN_JSON.get_or_make(_key(req), lambda: dumps(plan_for(req).to_json()))
    return Response(content=data, media_type="application/json")


def body_from_query(params: Any) -> PlanRequestBody | None:
    """The page's query string as a plan body; None when no question was asked yet."""
    if not any(params.get(k) for k in ("concurrency", "request_rate")):
        return None
    data: dict[str, Any] = {"model": str(params.get("model") or DEFAULTS["model"])}
    for name, kind in NUMBER_FIELDS.items():
        text = str(params.get(name) or "").strip()
        if text:
            try:
                data[name] = kind(text)
            except ValueError:
                expect = "a whole number" if kind is int else "a number"
                raise InputError(flag_of(name), text, expect) from None
    for name in ("instances", "engines"):
        values = [v for v in params.getlist(name) if v.strip()]
        if values:
            data[name] = ",".join(values)
        elif name == "instances":  # the form's default: the priced instances (see page_values)
            data[name] = ",".join(
                n for n in default_instances() if load_instances()[n].price_per_hour is not None
            )
    if str(params.get("measured_only") or "").lower() in TRUE_WORDS:
        data["measured_only"] = True
    price = str(params.get("price_per_hour") or "").strip()
    if price:
        data["price_per_hour"] = price
    if str(params.get("price_kinds") or "").strip().lower() == "all":
        data["price_kinds"] = "all"
    return PlanRequestBody.model_validate(data)


def page_values(params: Any) -> dict[str, Any]:
    """What the form shows: the query as typed, or the defaults."""
    values: dict[str, Any] = {name: str(params.get(name) or "") for name in NUMBER_FIELDS}
    values["model"] = str(params.get("model") or DEFAULTS["model"])
    for name in ("isl", "osl"):
        values[name] = values[name] or str(DEFAULTS[name])
    values["max_nodes"] = values["max_nodes"] or "16"
    if not any(params.get(k) for k in ("concurrency", "request_rate")):
        values["concurrency"] = values["concurrency"] or str(DEFAULTS["concurrency"])
    # unpriced instances start unticked: the page cannot cost them until a price is typed
    priced = [n for n in default_instances() if load_instances()[n].price_per_hour is not None]
    values["instances"] = [v for v in params.getlist("instances")] or priced
    values["engines"] = [v for v in params.getlist("engines")] or list(default_engines())
    values["measured_only"] = str(params.get("measured_only") or "").lower() in TRUE_WORDS
    values["price_per_hour"] = str(params.get("price_per_hour") or "")
    values["price_kinds"] = str(params.get("price_kinds") or "").strip().lower() == "all"
    return values


@page_router.get("/plan", response_class=HTMLResponse)
def plan_page(request: Request) -> HTMLResponse:
    from ..report.plan_chart import plan_context

    params = request.query_params
    ctx: dict[str, Any] = {
        "values": page_values(params),
        "fields": PAGE_FIELDS,
        "options": {
            "model": preset_names(),
            "instances": [
                (n, f"{n} ({i.gpu})", i.price_per_hour is not None) for n, i in load_instances().items()
            ],
            "engines": [(n, e.label) for n, e in load_engines().items()],
        },
        "measured_only_rule": MEASURED_ONLY,
        "error": "",
        "error_field": "",
        "result": None,
        "card_base": "",
    }
    status = 200
    try:
        from pydantic import ValidationError

        from .inputs import from_validation

        try:
            body = body_from_query(params)
        except ValidationError as err:
            raise from_validation(err) from None
        if body is not None:
            ctx["result"] = plan_context(plan_for(request_of(body)), web=True)
    except CalcError as err:
        ctx["error"], ctx["error_field"] = err.message, input_name(err) or ""
        status = 422
    html = view.templates().get_template("plan.html").render(**ctx)
    return HTMLResponse(html, status_code=status)
