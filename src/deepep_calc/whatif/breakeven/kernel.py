"""(a) The kernel latency at which DeepEP ties the alternative (a shift of the library's local
fixed latency)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...base.arrays import np
from ...base.quantity import Q
from ...decide.verdict import ARM_LABELS
from ...estimate.passes import model
from ...estimate.result import Result, table_for
from ...fit.table import Table
from ...question.scenario import Resolved
from .search import Answer, _at, why_not_served

# (a) kernel latency at which DeepEP ties the alternative ------------------------------------


def kernel_shifted(r: Resolved, delta_us: float, table: Table | None = None) -> Table:
    """The constants `r` runs with, with every DeepEP dispatch + combine `delta_us` slower per
    MoE layer: a what-if on one fitted constant, passed on as `compute(r, table=...)`.

    The shift goes to the library's local fixed latency, the one term every direction adds
    whatever the pipes (physics/deepep.py); across nodes the model scales that term by the
    instance factor, so the shift is divided by it first. A calibration profile's constants
    stay underneath (the table starts from `table_for(r)`).
    """
    table = table if table is not None else table_for(r)
    one_node = r.scenario.nodes <= 1 or r.transport.fabric == "nvlink"
    factor = 1.0 if one_node else table.instance_factor(r.instance.name).scalar
    library = r.transport.library
    nvl = table.nvlink_fit(library)
    shifted = replace(nvl, alpha_us=(nvl.alpha_us + delta_us / factor).as_("us"))
    return replace(table, nvlink={**table.nvlink, library: shifted})


def _per_layer_us(result: Result, layers: int) -> Q:
    comm = result.arms["deepep"].breakdown_ms["moe_comm"]
    return _at((comm * (1000.0 / max(layers, 1))).as_("us", f"DeepEP kernels per step / {layers} MoE layers"))


def _shifted(r: Resolved, table: Table, shift: float) -> Result:
    """The model with every DeepEP dispatch + combine `shift` us slower per MoE layer."""
    return model(r, table=kernel_shifted(r, shift, table))


def _ratio_at(r: Resolved, table: Table, shift: float) -> float:
    """DeepEP / alternative aggregate at a kernel shift of `shift` us."""
    return _at(_shifted(r, table, shift).ratio_deepep_vs_alternative).scalar


@dataclass(frozen=True)
class _Bracket:
    """The kernel latencies the search spans and the ratio at each end: from every fixed
    latency gone (`lowest`, giving `floor_us` per layer) to `high` us slower than `now_us`."""

    now_us: Q
    floor_us: Q
    lowest: float
    high: float
    r_low: float
    r_high: float


def _not_applicable(r: Resolved, base: Result, q: str) -> Answer | None:
    """No tie to look for when either compared arm cannot run here."""
    alt_name = r.scenario.alternative
    for name, arm in (("DeepEP", base.arms["deepep"]), (ARM_LABELS[alt_name], base.arms[alt_name])):
        if not bool(np.all(arm.feasible)):
            return Answer(
                "kernel_tie_us",
                q,
                None,
                f"No tie to find: {name} is not feasible here ({why_not_served(r, arm)}).",
                short="not applicable",
            )
    return None


def _bracket(r: Resolved, base: Result, table: Table) -> _Bracket:
    """Today's per-layer latency, the fastest these kernels can be, and the ratio at both ends."""
    layers = r.model.moe_layers
    now = _per_layer_us(base, layers)
    lowest = -_alpha_total(r, table)  # every fixed latency gone: the fastest these kernels can be
    floor = _per_layer_us(_shifted(r, table, lowest), layers)
    high = max(4.0 * now.scalar, 1000.0)  # four times slower than today (at least 1 ms)
    return _Bracket(now, floor, lowest, high, _ratio_at(r, table, lowest), _ratio_at(r, table, high))


def _never_ties(q: str, b: _Bracket) -> Answer | None:
    """Why no kernel latency ties, when none does: it moves nothing, or DeepEP stays behind even
    at the fastest, or ahead even at the slowest."""
    now, floor = b.now_us, b.floor_us
    check = {"now_us": now, "floor_us": floor}
    if abs(b.r_low - b.r_high) < 1e-6:
        note = (
            f"No kernel latency changes the ratio: the kernels (now {now.scalar:,.1f} µs per layer) "
            "hide under the engine's CPU path, so faster kernels would not help DeepEP here."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if b.r_low < 1.0:
        note = (
            f"No kernel latency ties: even at {floor.scalar:,.1f} µs per layer (no fixed latency; now "
            f"{now.scalar:,.1f} µs) DeepEP stays behind, so the rest of its step (engine, host proxy) "
            "decides, not the kernels."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if b.r_high > 1.0:
        note = (
            f"DeepEP stays ahead even at {now.scalar + b.high:,.0f} µs per layer (now {now.scalar:,.1f} µs): "
            "slower kernels would not change the verdict."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    return None


def _solved_tie(r: Resolved, q: str, b: _Bracket, table: Table) -> Answer:
    """Bisect the bracket for the latency at which the ratio is 1 (it falls as the shift grows)."""
    now, floor = b.now_us, b.floor_us
    alt_name = r.scenario.alternative
    lo, hi = b.lowest, b.high
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _ratio_at(r, table, mid) > 1.0 else (lo, mid)
    shift = 0.5 * (lo + hi)
    delta = Q(shift, "us", now.tag, "bisection on the model ratio")
    tie = (now + delta).as_(
        "us", f"solved: the per-layer latency at which the model ratio is 1 (DeepEP now {now.scalar:,.0f} us)"
    )
    check = {
        "now_us": now,
        "floor_us": floor,
        "solution_us": tie,
        "ratio_at_solution": _at(_shifted(r, table, shift).ratio_deepep_vs_alternative),
    }
    note = (
        f"DeepEP ties {ARM_LABELS[alt_name]} at {tie.scalar:,.1f} µs of dispatch + combine per MoE layer "
        f"(now {now.scalar:,.1f} µs, {delta.scalar:+,.1f} µs): faster kernels than that put DeepEP "
        "ahead, slower ones behind."
    )
    if tie.scalar < floor.scalar:
        note += (
            f" That is below the {floor.scalar:,.1f} µs the latency of leaving the node, the issue path and "
            "the bandwidth alone take at this shape: no fixed-latency saving reaches it."
        )
    return Answer("kernel_tie_us", q, tie, note, check)


def kernel_tie(r: Resolved) -> Answer:
    """The per-layer dispatch + combine latency at which DeepEP ties the alternative, or why
    no latency does."""
    q = f"Per-MoE-layer dispatch + combine latency at which DeepEP ties {ARM_LABELS[r.scenario.alternative]}"
    base = model(r)
    not_applicable = _not_applicable(r, base, q)
    if not_applicable is not None:
        return not_applicable
    table = table_for(r)
    b = _bracket(r, base, table)
    never = _never_ties(q, b)
    if never is not None:
        return never
    return _solved_tie(r, q, b, table)


def _alpha_total(r: Resolved, table: Table) -> float:
    """The local fixed part of one dispatch + combine as the model charges it here (us)."""
    local = table.nvlink_fit(r.transport.library).alpha_us.scalar
    if r.scenario.nodes <= 1 or r.transport.fabric == "nvlink":
        return local
    return local * table.instance_factor(r.instance.name).scalar
