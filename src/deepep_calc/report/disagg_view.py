"""The disaggregated deployment as every face shows it: its sides, where a request's time goes,
and the run blocks of both servers and the router.

Rows are built from `Result.to_json()["disaggregated"]` (figures the estimate made), so the
terminal card, the Markdown and HTML reports and the web page show the same numbers.
"""

from __future__ import annotations

from typing import Any

from ..decide.verdict import ARM_LABELS

TTFT_PARTS = (
    ("queue", "waiting for a slot"),
    ("prefill", "prefill"),
    ("transfer", "KV transfer (exposed)"),
    ("first_decode", "first decode step"),
)
SIDE_ROWS = (
    ("arm", "layout"),
    ("capacity_req_s", "capacity"),
    ("memory_gb_per_gpu", "memory / GPU"),
)


def side_arm_text(side: dict[str, Any]) -> str:
    """`DeepEP over efa-proxy`, `tensor parallel`, with how it was chosen."""
    arm = str(side["arm"])
    label = ARM_LABELS.get(arm, arm)
    if arm == "deepep":
        label = f"DeepEP over {side['transport'] if side['nodes'] > 1 else 'NVLink'}"
    mode = "CUDA graphs" if side["cuda_graphs"] else "eager"
    chosen = "" if side["chosen"] == "given" else " (best by the model)"
    return f"{label}, {mode}{chosen}"


def side_rows(d: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(label, prefill side, decode side): each cell a Q dict, a string or None."""
    p, q = d["prefill"], d["decode"]
    return [
        ("nodes", f"{p['nodes']}", f"{q['nodes']}"),
        ("layout", side_arm_text(p), side_arm_text(q)),
        ("step", p["prefill_ms"], q["step_ms"]),
        ("capacity", p["capacity_req_s"], q["capacity_req_s"]),
        ("busy", percent(d["busy"]["prefill"]), percent(d["busy"]["decode"])),
        ("memory / GPU", p["memory_gb_per_gpu"], q["memory_gb_per_gpu"]),
        ("fits", "yes" if p["fits_memory"] else "no", "yes" if q["fits_memory"] else "no"),
    ]


def headline_rows(d: dict[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """The deployment's own figures: (label, Q dict, digits)."""
    return [
        ("TTFT", d["ttft_ms"], 0),
        ("TPOT (decode side, no prefill mixed in)", d["tpot_ms"], 2),
        ("per-user decode", d["per_user_tok_s"], 1),
        ("aggregate", d["aggregate_tok_s"], 1),
        ("cost", d["usd_per_mtok"], 2),
        ("KV per request", megabytes(d["kv_bytes_per_request"]), 1),
        ("KV transfer", d["kv_transfer_ms"], 1),
        ("KV link capacity", d["capacity_req_s"]["transfer"], 1),
    ]


def megabytes(q: dict[str, Any]) -> dict[str, Any]:
    """A byte count as MB (decimal), the way the card reads it."""
    return {**q, "value": q["value"] / 1e6, "unit": "MB"}


def percent(q: dict[str, Any]) -> dict[str, Any]:
    """A fraction as a percentage."""
    return {**q, "value": q["value"] * 100.0, "unit": "%"}


BOTTLENECK = {
    "clients": "the load (no side is saturated)",
    "prefill": "the prefill side",
    "decode": "the decode side's running limit",
    "transfer": "the KV links",
}


def balance_words(d: dict[str, Any]) -> str:
    """What sets the throughput, which side has room to spare, and the balancing split."""
    idle = d["idle_fraction"]
    room = "idle" if d["idle_side"] == "prefill" else "has unused batch room"
    return (
        f"throughput set by {BOTTLENECK.get(d['bottleneck'], d['bottleneck'])}; "
        f"the {d['idle_side']} side {room} "
        f"{idle['value']:.0%} of the time [{idle['tag']}]; the sides balance at "
        f"{d['balanced_prefill_per_decode']['value']:.2f} prefill nodes per decode node"
    )


def time_split(d: dict[str, Any]) -> list[dict[str, Any]]:
    """Where one request's time goes: the TTFT parts, then the rest of its decode, each with
    its share of the request's whole time in the system."""
    parts = d["ttft_parts_ms"]
    osl_rest = d["tpot_ms"]["value"] * max(0.0, _osl(d) - 1.0)
    rows = [
        {
            "key": k,
            "label": label,
            "ms": parts[k]["value"] or 0.0,
            "tag": parts[k]["tag"],
            "source": parts[k]["source"],
        }
        for k, label in TTFT_PARTS
    ]
    rows.append(
        {
            "key": "decode",
            "label": "the other output tokens",
            "ms": osl_rest,
            "tag": d["tpot_ms"]["tag"],
            "source": "(OSL - 1) x TPOT",
        }
    )
    total = sum(r["ms"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["ms"] / total
    return rows


def _osl(d: dict[str, Any]) -> float:
    return float(d.get("osl") or 0.0)


def blocks(flags: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(caption, language, text) of the disaggregated run blocks, in order ([] when none)."""
    block = flags.get("disaggregated")
    if not block:
        return []
    return [(b["caption"], b["lang"], b["text"].rstrip("\n")) for b in block["blocks"]]


def page_rows(data: dict[str, Any]) -> dict[str, Any] | None:
    """What the page and the HTML report draw for a disaggregated scenario (None: aggregated):
    the deployment's figures, its two sides, where a request's time goes, the balance."""
    d = data.get("disaggregated")
    if not d:
        return None
    digits = {"ms": 1, "%": 0}
    sides = []
    for label, p, q in side_rows(d):
        sides.append(
            {
                "label": label,
                "cells": [
                    {"q": c, "digits": digits.get(c["unit"], 1)} if isinstance(c, dict) else {"text": str(c)}
                    for c in (p, q)
                ],
            }
        )
    return {
        "title": (
            f"{d['layout']}: {d['prefill_nodes']} prefill + {d['decode_nodes']} decode node"
            f"{'s' if d['nodes'] > 1 else ''}, KV over {d['kv_transport']}"
        ),
        "figures": [{"label": label, "q": q, "digits": n} for label, q, n in headline_rows(d)],
        "sides": sides,
        "time": time_split(d),
        "balance": _capital(balance_words(d)),
        "coverage": _capital(d["coverage"]),
        "feasible": d["feasible"],
        "why_not": d["why_not"],
        "kv_warning": d["kv_warning"],
    }


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
