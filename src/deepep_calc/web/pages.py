"""HTML routes: the calculator (works with JavaScript off) and the mechanism page.

With JavaScript on, the page updates itself from `/api/evaluate` and `/api/details`; with it
off, the form posts here and the server renders the same template with the result in it.
Both paths go through `inputs.run`, so both show what the CLI would print.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse
from starlette.datastructures import UploadFile

from ..base.errors import CalcError, FileInputError
from ..catalog.engines import load_engines
from ..catalog.hardware import load_instances
from ..catalog.hf import MAX_CONFIG_BYTES
from ..catalog.kv_transports import load_kv_transports
from ..catalog.model_catalog import preset_names
from ..catalog.models import DTYPES
from ..catalog.transports import load_transports
from ..estimate.operations import nic_utilisation_pct
from ..estimate.result import Result
from ..question.disagg import SIDE_ARMS
from ..question.fields import DEFAULTS
from ..report import view
from .api import details_of
from .guard import FORM_LIMIT
from .inputs import CONFIG_ORIGIN, api_message, input_name, request_from_form, run

router = APIRouter(include_in_schema=False)


def _escape(text: str) -> str:
    import html

    return html.escape(text)


# Inputs on the page, by section: (name, label, kind, help). Names are the Scenario fields.
MODEL_FIELDS = [
    ("experts", "Routed experts", "int", "what-if: experts per MoE layer"),
    ("topk", "Top-k", "int", "what-if: experts each token is sent to"),
    ("hidden", "Hidden size", "int", "what-if: model width"),
    ("moe_layers", "MoE layers", "int", "what-if: layers with experts"),
    ("weight_dtype", "Weight dtype", "dtype", "storage type of the weights"),
    ("kv_dtype", "KV-cache dtype", "dtype", "storage type of the KV cache"),
]
TOPOLOGY_FIELDS = [
    ("instance", "Instance", "instance", ""),
    ("nodes", "Nodes", "int", ""),
    ("gpus_per_node", "GPUs per node", "int", "blank = all of the instance's GPUs"),
    ("engine", "Engine", "engine", ""),
    ("cuda_graphs", "Decode mode", "graphs", "the measured cells ran eager"),
    ("transport", "DeepEP transport", "transport", ""),
    ("alternative", "Dense alternative", "alternative", ""),
    ("comms", "EP_NUM_COMMS", "int", "proxy communicators"),
    ("max_qps", "EP_EFA_MAX_QPS", "int", "queue pairs per peer"),
]
WORKLOAD_FIELDS = [
    ("concurrency", "Concurrency", "int", "requests in flight"),
    ("isl", "Input length (ISL)", "int", "prompt tokens"),
    ("osl", "Output length (OSL)", "int", "generated tokens"),
    ("slo_tok_s", "Per-user floor", "float", "tok/s each user must see"),
    ("ttft_ms", "TTFT ceiling", "float", "ms to the first token"),
    ("price_per_hour", "Price per node-hour", "float", "$; blank = catalog price"),
]
DISAGG_FIELDS = [  # a disaggregated deployment (blank: aggregated); each side's layout (blank: best)
    ("disagg", "Split (xPyD)", "text", "e.g. 1P3D: 1 prefill, 3 decode nodes; blank = aggregated"),
    ("kv_transport", "KV transport", "kv_transport", "prefill to decode; blank = the engine's"),
    ("prefill_arm", "Prefill arm", "side_arm", "blank = the model's best"),
    ("decode_arm", "Decode arm", "side_arm", "blank = the model's best"),
    ("prefill_transport", "Prefill DeepEP transport", "side_transport", "blank = as above"),
    ("decode_transport", "Decode DeepEP transport", "side_transport", "blank = as above"),
    ("prefill_cuda_graphs", "Prefill mode", "side_graphs", "blank = the decode mode"),
    ("decode_cuda_graphs", "Decode-side mode", "side_graphs", "blank = the decode mode"),
]
INPUTS = {
    name for group in (MODEL_FIELDS, TOPOLOGY_FIELDS, WORKLOAD_FIELDS, DISAGG_FIELDS) for name, *_ in group
} | {
    "model",
    "config_json",
}


@cache
def options() -> dict[str, Any]:
    transports = load_transports()
    return {
        "model": preset_names(),
        "instance": [
            (n, f"{n} ({i.gpu} x{i.gpus_per_node}, {i.fabric.upper()})") for n, i in load_instances().items()
        ],
        "engine": [(n, e.label) for n, e in load_engines().items()],
        "transport": [
            (
                n,
                f"{n}: {'host proxy' if t.host_proxied else 'GPU-initiated'}",
                ",".join(t.instances),
                t.host_proxied,
            )
            for n, t in transports.items()
        ],
        "alternative": [("allgather", "allgather / reduce-scatter"), ("tp", "tensor parallel")],
        "dtype": list(DTYPES),
        "graphs": [("false", "eager"), ("true", "CUDA graphs")],
        "kv_transport": [("", "the engine's default")]
        + [(n, f"{n}{'' if k.rdma else ' (no RDMA on EFA)'}") for n, k in load_kv_transports().items()],
        "side_arm": [("", "the model's best")] + [(a, a) for a in SIDE_ARMS],
        "side_transport": [("", "as the DeepEP transport")] + [(n, n) for n in transports],
        "side_graphs": [("", "as the decode mode"), ("false", "eager"), ("true", "CUDA graphs")],
    }


def _defaults() -> dict[str, str]:
    out = {
        k: ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
        for k, v in DEFAULTS.items()
    }
    out["config_text"] = ""
    out["disagg"] = ""
    return out


def _upload_text(upload: Any) -> str:
    """An uploaded config file as text, within the CLI's size limit."""
    if not isinstance(upload, UploadFile) or not upload.filename:
        return ""
    raw = upload.file.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise FileInputError(CONFIG_ORIGIN, "is larger than 5 MB; refused", field="config_json")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise FileInputError(
            CONFIG_ORIGIN, f"is not UTF-8 text (invalid byte at offset {err.start})", field="config_json"
        ) from None


def calculator_context(
    values: dict[str, str], result: Result | None, error: CalcError | None
) -> dict[str, Any]:
    shown = {**_defaults(), **values}
    field = input_name(error) if error is not None else None
    ctx: dict[str, Any] = {
        "values": shown,
        "options": options(),
        "groups": {
            "model": MODEL_FIELDS,
            "topology": TOPOLOGY_FIELDS,
            "workload": WORKLOAD_FIELDS,
            "disagg": DISAGG_FIELDS,
        },
        "field_error": {field: api_message(error)} if error is not None and field in INPUTS else {},
        "form_error": api_message(error) if error is not None and field not in INPUTS else "",
        "layout": {**view.page_layout(), "defaults": _defaults()},
        "nic": nic_utilisation_pct().to_json(),
        "data": None,
    }
    if result is not None:
        data = result.to_json()
        details = details_of(result)
        ctx.update(
            data=data,
            verdict=data["verdict"],
            cards=view.verdict_cards(data),
            summary=details["summary"],
            details=details,
            cli=details["cli"],
        )
    return ctx


def render_calculator(values: dict[str, str], upload: Any = None) -> HTMLResponse:
    values = {k: v for k, v in values.items() if isinstance(v, str)}
    result, error = None, None
    try:
        text = _upload_text(upload)
        if text:
            values["config_text"] = text
        result = run(request_from_form(values))
    except CalcError as err:
        error = err
    html = view.templates().get_template("index.html").render(**calculator_context(values, result, error))
    return HTMLResponse(html, status_code=200 if error is None else 422)


@router.get("/", response_class=HTMLResponse)
async def calculator(request: Request) -> HTMLResponse:
    return render_calculator(dict(request.query_params))


@router.post("/", response_class=HTMLResponse)
async def calculator_post(request: Request) -> HTMLResponse:
    form = await request.form(max_files=1, max_fields=64, max_part_size=FORM_LIMIT)
    upload = form.get("config_file")
    return render_calculator({k: v for k, v in form.items() if isinstance(v, str)}, upload)


def mechanism_html(values: dict[str, str] | None = None) -> str:
    """The mechanism page; its disaggregated section is drawn from the query's scenario."""
    if not values:
        return _mechanism_default()
    return _mechanism_page(values)


@cache
def _mechanism_default() -> str:
    return _mechanism_page(None)


def _mechanism_page(values: dict[str, str] | None) -> str:
    from ..api import evaluate
    from ..report.charts import per_user_vs_concurrency
    from . import mechanism

    base = mechanism.default_result()
    scenario, models = mechanism.disagg_scenario(values)
    split = evaluate(scenario, models=models)
    timeline = mechanism.disagg_timeline(split)
    timeline["query"] = "&".join(f"{k}={v}" for k, v in (values or {}).items())
    return (
        view.templates()
        .get_template("mechanism.html")
        .render(
            content=mechanism.content(),
            diagram=mechanism.diagram(),
            signature=mechanism.signature(),
            per_op=mechanism.per_operation(base),
            kernels=mechanism.kernel_status(),
            base=base.to_json(),
            nic_measured=nic_utilisation_pct().to_json(),
            chart=per_user_vs_concurrency(base),
            timeline=timeline,
        )
    )


@router.get("/mechanism", response_class=HTMLResponse)
async def mechanism_page(request: Request) -> HTMLResponse:
    values = {k: v for k, v in request.query_params.items() if isinstance(v, str)}
    try:
        return HTMLResponse(mechanism_html(values))
    except CalcError as err:
        return HTMLResponse(f"<p>{_escape(api_message(err))}</p>", status_code=422)


@router.get("/static/plotly.min.js")
async def plotly_js() -> FileResponse:
    return FileResponse(
        str(view.plotly_js_path()),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )
