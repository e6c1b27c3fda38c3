"""(a) The kernel latency at which DeepEP ties the alternative (a shift of the library's local
fixed latency)."""

from __future__ import annotations

from dataclasses import replace

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


def kernel_tie(r: Resolved) -> Answer:
    alt_name = r.scenario.alternative
    q = f"Per-MoE-layer dispatch + combine latency at which DeepEP ties {ARM_LABELS[alt_name]}"
    base = model(r)
    layers = r.model.moe_layers
    now = _per_layer_us(base, layers)
    dee, alt = base.arms["deepep"], base.arms[alt_name]
    for name, arm in (("DeepEP", dee), (ARM_LABELS[alt_name], alt)):
        if not bool(np.all(arm.feasible)):
            return Answer(
                "kernel_tie_us",
                q,
                None,
                f"No tie to find: {name} is not feasible here ({why_not_served(r, arm)}).",
                short="not applicable",
            )

    table = table_for(r)

    def at(shift: float) -> Result:
        return model(r, table=kernel_shifted(r, shift, table))

    def ratio_at(shift: float) -> float:
        return _at(at(shift).ratio_deepep_vs_alternative).scalar

    lowest = -_alpha_total(r, table)  # every fixed latency gone: the fastest these kernels can be
    floor = _per_layer_us(at(lowest), layers)
    high = max(4.0 * now.scalar, 1000.0)  # four times slower than today (at least 1 ms)
    r_low, r_high = ratio_at(lowest), ratio_at(high)
    check = {"now_us": now, "floor_us": floor}
    if abs(r_low - r_high) < 1e-6:
        note = (
            f"No kernel latency changes the ratio: the kernels (now {now.scalar:,.1f} µs per layer) "
            "hide under the engine's CPU path, so faster kernels would not help DeepEP here."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if r_low < 1.0:
        note = (
            f"No kernel latency ties: even at {floor.scalar:,.1f} µs per layer (no fixed latency; now "
            f"{now.scalar:,.1f} µs) DeepEP stays behind, so the rest of its step (engine, host proxy) "
            "decides, not the kernels."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if r_high > 1.0:
        note = (
            f"DeepEP stays ahead even at {now.scalar + high:,.0f} µs per layer (now {now.scalar:,.1f} µs): "
            "slower kernels would not change the verdict."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    lo, hi = lowest, high  # ratio falls as the shift grows: bisect for ratio = 1
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio_at(mid) > 1.0 else (lo, mid)
    shift = 0.5 * (lo + hi)
    delta = Q(shift, "us", now.tag, "bisection on the model ratio")
    tie = (now + delta).as_(
        "us", f"solved: the per-layer latency at which the model ratio is 1 (DeepEP now {now.scalar:,.0f} us)"
    )
    check = {
        **check,
        "solution_us": tie,
        "ratio_at_solution": _at(at(shift).ratio_deepep_vs_alternative),
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


def _alpha_total(r: Resolved, table: Table) -> float:
    """The local fixed part of one dispatch + combine as the model charges it here (us)."""
    local = table.nvlink_fit(r.transport.library).alpha_us.scalar
    if r.scenario.nodes <= 1 or r.transport.fabric == "nvlink":
        return local
    return local * table.instance_factor(r.instance.name).scalar
