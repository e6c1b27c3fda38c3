"""Words and launch lines for disaggregated prefill / decode.

- `comparison()`: the verdict card's extra line. For an aggregated scenario, whether the best
  split of the same nodes into prefill and decode servers would beat the recommended arm; for a
  disaggregated one, whether the aggregated arm on the same nodes beats it. Both figures are
  quoted with their bands; "beats" is the verdict's rule (targets first, then the aggregate by
  more than the noise band).
- `advisories()`: the failure modes the facts record for KV transfer over EFA (a UCX backend,
  a silent TCP fallback, queue-depth limits at high load), each with the model's figures.
- the launch lines of both servers and the router are `disagg_launch.py`'s.

The figures come from `estimate/disagg.py`; nothing here computes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.quantity import Q
from ..catalog.constants import const
from ..estimate.disagg import DisaggResult, best_split
from .verdict import ARM_LABELS, NO_ARM, tagged

BOTTLENECK_WORDS = {
    "clients": "the load itself (every request is in flight, none waits)",
    "prefill": "the prefill side's capacity",
    "decode": "the decode side's running limit",
    "transfer": "the KV links' capacity",
}


def banded_words(q: Q, digits: int = 0) -> str:
    """`1,364 tok/s (1,226-1,400) [assumed]`: a figure, its band when modelled, its tag."""
    value = q.scalar
    text = "n/a" if value != value else f"{value:,.{digits}f}"
    band = ""
    if q.banded:
        lo, hi = float(q.low), float(q.high)  # type: ignore[arg-type]
        band = f" ({lo:,.{digits}f}–{hi:,.{digits}f})"
    unit = "" if q.unit in ("x", "1") else f" {q.unit}"
    return f"{text}{unit}{band} [{q.tag}]"


def layout_words(d: DisaggResult) -> str:
    """`1P3D (prefill: tensor parallel, decode: DeepEP over efa-proxy), KV over nixl-libfabric`."""
    parts = []
    for side in (d.prefill, d.decode):
        arm = str(side.arm)
        label = ARM_LABELS.get(arm, arm)
        if arm == "deepep":
            route = side.side.transport.name if side.nodes > 1 else "NVLink"
            label = f"DeepEP over {route}"
        parts.append(f"{side.role}: {label}")
    return f"{d.label} ({', '.join(parts)}), KV over {d.kv.name}"


def _meets(d: Any) -> bool:
    return bool(d.feasible) and d.meets_slo is not False and d.meets_ttft is not False


def _beats(a_meets: bool, a: Q, b_meets: bool, b: Q) -> bool:
    if a_meets != b_meets:
        return a_meets
    return a.scalar > b.scalar * (1.0 + float(const("noise_band").value))


def _compared(result: Any, v: Any) -> tuple[DisaggResult, Any, bool] | None:
    """The split and the aggregated arm to set beside each other, and whether the split was
    asked for; None when there is no split to speak of (one node; no split runs)."""
    arm_name = v.recommended_arm
    agg = result.arms.get(arm_name) if arm_name != NO_ARM else None
    d = result.disaggregated
    asked = d is not None
    if d is None:
        if agg is None:
            return None
        d = best_split(result.resolved)
        if d is None or not bool(d.feasible):
            return None
    return d, agg, asked


def _served_words(aggregate: Q, ttft: Q, per_user: Q) -> str:
    """`1,364 tok/s (...) aggregate, TTFT ..., ... per user`: what one side of the line serves."""
    return (
        f"{banded_words(aggregate)} aggregate, TTFT {banded_words(ttft)}, "
        f"{banded_words(per_user, 1)} per user"
    )


def _figures(d: DisaggResult, arm_name: str, agg: Any, agg_q: Q | None) -> dict[str, Any]:
    """The JSON figures of both sides (the aggregated one None when there is no such arm)."""
    aggregated = None
    if agg is not None and agg_q is not None:
        aggregated = {
            "arm": arm_name,
            "aggregate_tok_s": agg_q.to_json(),
            "ttft_ms": agg.ttft_ms.to_json(),
            "per_user_tok_s": agg.per_user_tok_s.to_json(),
            "usd_per_mtok": agg.usd_per_mtok.to_json(),
        }
    return {
        "layout": d.label,
        "disaggregated": {
            "aggregate_tok_s": d.aggregate_tok_s.to_json(),
            "ttft_ms": d.ttft_ms.to_json(),
            "per_user_tok_s": d.per_user_tok_s.to_json(),
            "usd_per_mtok": d.usd_per_mtok.to_json(),
            "feasible": bool(d.feasible),
        },
        "aggregated": aggregated,
        "ask": {"prefill_nodes": d.spec.prefill.nodes, "decode_nodes": d.spec.decode.nodes},
    }


@dataclass(frozen=True)
class _Line:
    """What the card's sentence quotes of both sides: it is worded once all of it is known."""

    d: DisaggResult
    asked: bool
    agg_meets: bool
    agg_label: str
    agg_text: str  # "" when there is no aggregated arm to quote
    dis_text: str


def _cannot_run_line(p: _Line) -> str:
    """An asked-for split that cannot run: no figures of its own to set beside the other."""
    d = p.d
    return f"This disaggregated {layout_words(d)} cannot run: {d.why_not}" + (
        f"; the {p.agg_label} on the same {d.nodes} nodes serves {p.agg_text}." if p.agg_text else "."
    )


def _verdict_line(p: _Line, s: Any, disagg_wins: bool, agg_wins: bool) -> tuple[str, str]:
    """(winner, sentence without its full stop) for a split that runs."""
    d, nodes, agg_label, agg_text, dis_text = p.d, p.d.nodes, p.agg_label, p.agg_text, p.dis_text
    if disagg_wins:
        head = (
            f"Disaggregated {layout_words(d)} would beat {agg_label} on the same {nodes} nodes"
            if not p.asked
            else f"This disaggregated {layout_words(d)} beats {agg_label} on the same {nodes} nodes"
        )
        line = f"{head}{_why(d, p.agg_meets, s)}: {dis_text}" + (f", against {agg_text}" if agg_text else "")
        if not p.asked:
            line += f" (ask for it: --disagg {d.label})"
        return "disaggregated", line
    if agg_wins:
        return "aggregated", (
            f"The {agg_label} on the same {nodes} nodes beats this disaggregated "
            f"{layout_words(d)}{_why(d, p.agg_meets, s, reverse=True)}: {agg_text}, against {dis_text}"
        )
    return "tie", (
        f"This disaggregated {layout_words(d)} and the {agg_label} on the same {nodes} nodes tie "
        f"within the noise band: {dis_text}, against {agg_text}"
    )


def comparison(result: Any, v: Any) -> dict[str, Any] | None:
    """The disaggregated-against-aggregated line of the card, or None when there is nothing
    to say (one node; no split runs; an aggregated scenario whose split does not win)."""
    picked = _compared(result, v)
    if picked is None:
        return None
    d, agg, asked = picked
    arm_name = v.recommended_arm
    agg_meets = agg is not None and _meets(agg)
    agg_q = (agg.model_aggregate_tok_s or agg.aggregate_tok_s) if agg is not None else None
    disagg_wins = bool(d.feasible) and (
        agg_q is None or _beats(_meets(d), d.aggregate_tok_s, agg_meets, agg_q)
    )
    agg_wins = (
        agg_q is not None and agg is not None and _beats(agg_meets, agg_q, _meets(d), d.aggregate_tok_s)
    )
    if not asked and not disagg_wins:
        return None
    figures = _figures(d, arm_name, agg, agg_q)
    dis_text = _served_words(d.aggregate_tok_s, d.ttft_ms, d.per_user_tok_s)
    if agg is not None and agg_q is not None:
        agg_text = _served_words(agg_q, agg.ttft_ms, agg.per_user_tok_s)
        agg_label = f"aggregated {ARM_LABELS[arm_name]}"
    else:
        agg_text, agg_label = "", "no aggregated arm"
    line = _Line(d, asked, agg_meets, agg_label, agg_text, dis_text)
    if not bool(d.feasible):
        figures.update(line=_cannot_run_line(line), winner="aggregated" if agg_text else None, asked=asked)
        return figures
    winner, text = _verdict_line(line, result.scenario, disagg_wins, agg_wins)
    figures.update(line=text + ".", winner=winner, asked=asked)
    return figures


def _why(d: DisaggResult, agg_meets: bool, s: Any, reverse: bool = False) -> str:
    """Which target decided it, when one did."""
    d_meets = _meets(d)
    if d_meets == agg_meets or (s.slo_tok_s is None and s.ttft_ms is None):
        return ""
    if reverse:
        return " (it meets the targets, the split does not)" if agg_meets else ""
    return " (it meets the targets, the aggregated arm does not)" if d_meets else ""


def advisories(result: Any) -> list[str]:
    """The failure modes of KV transfer over EFA, with the model's figures for this scenario."""
    d: DisaggResult | None = result.disaggregated
    if d is None:
        return []
    out: list[str] = []
    if d.kv.warning:
        out.append(f"{d.kv.warning}. Here it moves each request's KV in {tagged(d.exposed_ms, 0)}.")
    tcp = d.tcp_fallback
    if tcp:
        head = (
            "An image without the NCCL OFI plugin (aws-ofi-nccl), or a Mooncake wheel built without "
            "EFA, falls back to TCP without an error"
        )
        check = "Check the transfer library's log for the EFA / LIBFABRIC path before benchmarking."
        if tcp["transfer_ms"].scalar > 1.5 * d.exposed_ms.scalar:
            out.append(
                f"{head}: the KV would then take {tagged(tcp['transfer_ms'], 0)} per request instead "
                f"of {tagged(d.exposed_ms, 0)}, TTFT {tagged(tcp['ttft_ms'], 0)} instead of "
                f"{tagged(_plain(d.ttft_ms), 0)}. {check}"
            )
        else:
            out.append(
                f"{head}. Here the engine's KV blocks of {d.block_bytes.scalar / 1024:,.0f} KiB keep "
                f"{d.kv.name} near TCP's speed ({tagged(d.node_pair_gb_s)} per node pair at that block); "
                f"the gap opens with larger blocks (~14 vs ~400 GB/s at large transfers). {check}"
            )
    if d.load_limit is not None and d.in_flight_tokens is not None:
        out.append(
            f"At {tagged(d.in_flight_tokens, 0)} of prompt KV in flight (ISL x concurrency) this load "
            f"reaches one where KV transfers over EFA were seen to fail: {d.load_limit.source}. "
            f"Raise the transfer library's queue depths, or lower the concurrency per prefill server."
        )
    if d.inside_references is False:
        out.append(f"Disaggregated figures: {d.evidence_note}.")
    side, idle = d.idle()
    if bool(d.feasible) and idle.scalar > 0.5:
        room = "is idle" if side == "prefill" else "leaves unused"
        what = "of the time" if side == "prefill" else "of its running limit"
        out.append(
            f"The {side} side {room} {idle.scalar:.0%} {what} [{idle.tag}]: "
            f"{BOTTLENECK_WORDS[str(d.bottleneck)]} sets the throughput; the two sides' capacities "
            f"balance at about {d.balance.scalar:.2f} prefill nodes per decode node [{d.balance.tag}]."
        )
    return out


def _plain(q: Q) -> Q:
    return Q(q.value, q.unit, q.tag, q.source)
