"""The mechanism page: words from `mechanism.toml`, numbers from the catalogs and the model.

The diagram's geometry is computed here from the layer lists, so adding a layer to the data
redraws the picture; the template only places the boxes it is given.
"""

from __future__ import annotations

import itertools
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..api import evaluate
from ..base import palette
from ..base.quantity import Q
from ..catalog.measured import load_cells
from ..catalog.models import ModelSpec
from ..catalog.transports import load_transports
from ..estimate.operations import campaign_proxy, kernel_standing, native_vs_proxy, step_operations
from ..estimate.result import Result
from ..fit.observations import cell_scenario
from ..question.scenario import Scenario


class Property(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    ib: str
    efa: str
    effect: str


class Layer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    detail: str


class PathSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    title: str
    colour: str
    note: str
    layers: list[Layer]


class GpuInitiatedWork(BaseModel):
    """Where GPU-initiated EFA stands: what works, what is missing, the campaign, what ships."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    works: list[str]
    missing: list[str]
    campaign: str
    shipping: str


class Content(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    intro: str
    property: list[Property]
    path: list[PathSpec]
    status: GpuInitiatedWork  # the TOML table is [status]


@cache
def content() -> Content:
    text = resources.files("deepep_calc.web").joinpath("mechanism.toml").read_text("utf-8")
    return Content.model_validate(tomllib.loads(text))


# diagram -------------------------------------------------------------------------------------

BOX_W, BOX_H, GAP, PAD, LANE_H, TITLE_H = 150, 64, 38, 16, 128, 26


def diagram() -> dict[str, Any]:
    """Boxes and arrows of the two paths; the GPU-initiated path's NIC sits under the EFA NIC,
    so the skipped host segment shows as one long arrow."""
    paths = content().path
    columns = max(len(p.layers) for p in paths)
    width = 2 * PAD + columns * BOX_W + (columns - 1) * GAP
    lanes = []
    colours = {"host_proxied": palette.HOST_PROXIED, "gpu_initiated": palette.GPU_INITIATED}
    for i, p in enumerate(paths):
        top = PAD + i * LANE_H
        y = top + TITLE_H
        cols = list(range(len(p.layers)))
        if len(p.layers) < columns:  # first layer at the left, the rest packed to the right
            cols = [0, *range(columns - len(p.layers) + 1, columns)]
        boxes = [
            {
                "x": PAD + c * (BOX_W + GAP),
                "y": y,
                "w": BOX_W,
                "h": BOX_H,
                "name": layer.name,
                "detail": layer.detail,
            }
            for c, layer in zip(cols, p.layers, strict=True)
        ]
        arrows = []
        for a, b in itertools.pairwise(boxes):
            skipped = (b["x"] - a["x"]) // (BOX_W + GAP) - 1
            arrows.append(
                {
                    "x1": a["x"] + BOX_W,
                    "x2": b["x"] - 4,
                    "y": y + BOX_H / 2,
                    "label": f"host segment skipped ({skipped} layers)" if skipped > 0 else "",
                }
            )
        lanes.append(
            {
                "title": f"{p.title}: {len(p.layers)} layers",
                "colour": colours[p.colour],
                "title_y": top + 16,
                "boxes": boxes,
                "arrows": arrows,
                "note": p.note,
            }
        )
    return {"width": width, "height": PAD + len(paths) * LANE_H, "lanes": lanes}


# numbers -----------------------------------------------------------------------------------------


def _row(label: str, q: Q, digits: int, note: str = "") -> dict[str, Any]:
    return {"label": label, "q": q.to_json(), "digits": digits, "note": note}


def default_result() -> Result:
    """The fair A/B at concurrency 32: the scenario the flat lines were measured in."""
    return evaluate(Scenario())


def signature() -> list[dict[str, Any]]:
    """The three measured regimes of the A/B: per-user lines, the tax and the ratio in each."""
    rows = []
    for cell in load_cells().values():
        if cell.role != "calibration" or cell.engine != "trtllm" or cell.allgather is None:
            continue
        res = evaluate(cell_scenario(cell), explain=False)
        rows.append(
            {
                "cell": cell.id,
                "concurrency": cell.concurrency,
                "isl": cell.isl,
                "deepep": res.arms["deepep"].per_user_tok_s.to_json(),
                "dense": res.arms["allgather"].per_user_tok_s.to_json(),
                "tax": res.tax_ms_per_token.to_json(),
                "ratio": res.ratio_deepep_vs_alternative.to_json(),
            }
        )
    return rows


def per_operation(base: Result) -> list[dict[str, Any]]:
    """One decode step of the DeepEP arm at the default scenario, counted operation by operation."""
    op = step_operations(base)
    return [
        _row("Tokens per rank per step", op.tokens, 0),
        _row("Token-expert pairs per rank per MoE layer", op.selections, 0),
        _row("of which leave the node", op.remote, 0),
        _row(
            "Work requests posted, per direction",
            op.posts,
            0,
            "payload and notice are separate writes on SRD",
        ),
        _row("Dispatch bytes leaving the node per layer", op.dispatch_kb, 1),
        _row("Wire time for those bytes at line rate", op.wire_us, 2),
        _row("Time the path spends per MoE layer", op.path_us, 0, "kernels plus host-proxy round trips"),
        _row(f"Host-proxy cost per step ({op.moe_layers} MoE layers)", op.proxy_ms, 1),
        _row("Dispatch + combine kernels per step", op.kernels_ms, 1),
        _row(
            "DeepEP tax per output token",
            base.tax_ms_per_token,
            1,
            "1000 / DeepEP per-user - 1000 / dense per-user",
        ),
        _row("NIC utilisation on the dispatch path", op.nic_pct, 1),
        *model_nic_rows(base.arms["deepep"]),
        _row("Time the fabric sits idle", op.idle_pct, 1),
    ]


def model_nic_rows(arm: Any) -> list[dict[str, Any]]:
    """The model's NIC busy share of this scenario, beside the measured one: its wire bytes over
    the exchange's own time and over the step, each at the instance's line rate per GPU."""
    b = arm.bounds
    if b is None:
        return []
    return [
        _row(
            "NIC busy while the exchange runs, this scenario (model)",
            b.nic_busy_exchange_pct,
            2,
            f"wire bytes {b.wire_mb.scalar:,.1f} MB per step / (exchange time x line rate per GPU); "
            "the band is the kernels' out-of-sample band",
        ),
        _row(
            "NIC busy over the whole step, this scenario (model)",
            b.nic_busy_pct,
            2,
            "the same bytes / (decode step x line rate per GPU)",
        ),
    ]


def kernel_status() -> dict[str, Any]:
    """The CQ-poll campaign against the same-day proxy, the shipping EFA-GDA and InfiniBand."""
    tr = load_transports()
    entries = [
        ("efa-proxy", "Host proxy, same campaign", campaign_proxy(), palette.HOST_PROXIED),
        (
            "efa-native-cqpoll",
            "Native GPU-initiated, CQ polling",
            tr["efa-native-cqpoll"].reference,
            palette.GPU_INITIATED,
        ),
        ("efa-gda", "EFA-GDA (shipping)", tr["efa-gda"].reference, palette.GPU_INITIATED),
        ("ib-ibgda", "InfiniBand IBGDA", tr["ib-ibgda"].reference, palette.GPU_INITIATED),
    ]
    standing = kernel_standing([(name, ref) for name, _, ref, _ in entries])
    rows = [
        {
            "transport": k.transport,
            "label": label,
            "colour": colour,
            "where": k.ref.label,
            "dispatch": k.dispatch.to_json(),
            "combine": k.combine.to_json(),
            "vs_ib_dispatch": k.vs_ib_dispatch.to_json(),
            "vs_ib_combine": k.vs_ib_combine.to_json(),
        }
        for k, (_, label, _, colour) in zip(standing, entries, strict=True)
    ]
    dispatch, combine = native_vs_proxy()
    return {
        "rows": rows,
        "native_vs_proxy_dispatch": dispatch.to_json(),
        "native_vs_proxy_combine": combine.to_json(),
    }


# a disaggregated request ---------------------------------------------------------------------

TIMELINE_W, TIMELINE_H, TIMELINE_PAD = 760, 34, 8


def disagg_scenario(values: dict[str, str] | None = None) -> tuple[Scenario, dict[str, ModelSpec]]:
    """The scenario the disaggregated section draws, with the in-memory models it names: the
    page's query (as the calculator reads it); a query that names no split has its nodes split
    evenly (4 nodes: 2P2D, prefill the smaller half), and fewer than two nodes become 1P1D;
    with no query, the default scenario as 1P1D."""
    if not values:
        return Scenario(prefill_nodes=1, decode_nodes=1), {}
    from .inputs import prepare, request_from_form

    fields = dict(values)
    if not any(fields.get(k) for k in ("disagg", "prefill_nodes", "decode_nodes")):
        text = str(fields.get("nodes") or "").strip()
        nodes = int(text) if text.isdigit() else None  # not a number: the form refuses it below
        if nodes is not None and nodes < 2:
            del fields["nodes"]  # one node cannot be split: the section draws 1P1D
            nodes = None
        total = nodes or 2
        fields["disagg"] = f"{total // 2}P{total - total // 2}D"
    return prepare(request_from_form(fields))


def disagg_timeline(result: Result) -> dict[str, Any]:
    """Where one request's time goes, drawn to scale twice: up to its first token, and whole.

    The parts and their figures are the model's for this scenario (`estimate/disagg.py`), so
    the bars move with every input; the geometry is computed here, the template only places it.
    """
    from ..report import disagg_view

    data = result.to_json()
    d = data["disaggregated"]
    parts = [{**p, "colour": palette.REQUEST_TIME[p["key"]]} for p in disagg_view.time_split(d)]
    first = [p for p in parts if p["key"] != "decode"]
    bars = []
    for title, shown in (("to the first token", first), ("the whole request", parts)):
        total = sum(p["ms"] for p in shown) or 1.0
        x = float(TIMELINE_PAD)
        segments = []
        for p in shown:
            w = (TIMELINE_W - 2 * TIMELINE_PAD) * p["ms"] / total
            segments.append(
                {**p, "x": x, "w": w, "colour": palette.REQUEST_TIME[p["key"]], "share_here": p["ms"] / total}
            )
            x += w
        bars.append({"title": title, "total_ms": total, "segments": segments})
    return {
        "width": TIMELINE_W,
        "height": TIMELINE_H,
        "bars": bars,
        "layout": d["layout"],
        "summary": (
            f"{data['scenario']['model_resolved']} on {d['nodes']}x {data['scenario']['instance']}, "
            f"{d['prefill_nodes']} prefill + {d['decode_nodes']} decode node(s), "
            f"KV over {d['kv_transport']}, "
            f"concurrency {data['scenario']['concurrency']}, ISL {d['isl']:,} / OSL {d['osl']:,}"
        ),
        "parts": parts,
        "ttft": d["ttft_ms"],
        "tpot": d["tpot_ms"],
        "kv_bytes": disagg_view.megabytes(d["kv_bytes_per_request"]),
        "kv_block": d["kv_block_bytes"],
        "kv_pair": d["kv_node_pair_gb_s"],
        "stream": d["kv_stream"],
        "stream_source": d["kv_stream_source"],
        "balance": disagg_view.balance_words(d),
        "line": (data["verdict"]["disaggregation"] or {}).get("line", ""),
        "query": "",
    }
