"""The accuracy report: the model against every published reference in the catalogs.

Kernel references (each transport's primary reference and its cross-checks) are compared with
`kernel_us` at their instance, EP, shape, comms and QPs. Serving cells are compared with the
model itself, never with the measured substitution `evaluate()` applies at a cell: the cell's
scenario goes through `compute(resolve(...).vary(concurrency=[c]))`. A/B cells also get the
verdict the model would give against the verdict the measurement gives (same noise band as
`verdict.py`: above 1 + band DeepEP wins, below 1 - band dense wins, between is a tie, which the
verdict counts as dense).

Rows the fit used (engine anchors, primary kernel references) reproduce by construction; every
group reports its MAPE over all rows and over the held-out rows alone. Nothing is tuned per row.
`render_markdown()` is deterministic: docs/model.md embeds it and a test compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .catalog.constants import const
from .catalog.engines import load_engines
from .catalog.hardware import get_instance
from .catalog.measured import Cell, load_cells, load_facts
from .catalog.transports import KernelRef, Transport, load_transports
from .evaluate import Result, compute
from .physics.comm import KernelShape, kernel_us
from .physics.fit import cell_scenario, solve_engine
from .quantity import Q
from .scenario import resolve

# Cell metrics compared, with the model figure each is compared to.
SERVING_METRICS = (
    ("per_user_tok_s", "per_user_tok_s", "tok/s"),
    ("itl_ms", "step_ms", "ms"),
    ("ttft_p50_ms", "ttft_ms", "ms"),
    ("aggregate_tok_s", "aggregate_tok_s", "tok/s"),
)
GROUP_ORDER = ("kernel primary", "kernel cross-check", "per-user", "ITL", "TTFT", "aggregate", "A/B ratio")


@dataclass
class Row:
    group: str
    reference: str  # what was measured: transport @ instance EPn, or a cell id and arm
    metric: str
    measured: float
    predicted: Q
    source: str
    fitted: bool  # used by a fit: reproduced by construction, excluded from held-out MAPE

    @property
    def error(self) -> float:
        """Signed relative error of the model, (model - reference) / reference."""
        return (self.predicted.scalar - self.measured) / self.measured

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "reference": self.reference,
            "metric": self.metric,
            "measured": self.measured,
            "predicted": self.predicted.to_json(),
            "error": self.error,
            "fitted": self.fitted,
            "source": self.source,
        }


@dataclass
class ABRow:
    cell: str
    engine: str
    concurrency: int
    labels: tuple[str, str]  # (DeepEP side, other side)
    measured_ratio: float
    predicted_ratio: Q
    fitted: bool

    @staticmethod
    def call(ratio: float, labels: tuple[str, str]) -> str:
        band = const("noise_band").scalar
        if ratio > 1.0 + band:
            return labels[0]
        if ratio < 1.0 - band:
            return labels[1]
        return "tie"

    @property
    def measured_call(self) -> str:
        return self.call(self.measured_ratio, self.labels)

    @property
    def predicted_call(self) -> str:
        return self.call(self.predicted_ratio.scalar, self.labels)

    @property
    def agree(self) -> bool:
        """The verdicts agree: a tie goes to the other side, as `verdict.py` rules."""
        return (self.measured_call == self.labels[0]) == (self.predicted_call == self.labels[0])

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "engine": self.engine,
            "concurrency": self.concurrency,
            "sides": list(self.labels),
            "measured_ratio": self.measured_ratio,
            "predicted_ratio": self.predicted_ratio.to_json(),
            "measured_call": self.measured_call,
            "predicted_call": self.predicted_call,
            "verdict_agrees": self.agree,
            "same_band": self.measured_call == self.predicted_call,
            "fitted": self.fitted,
        }


@dataclass
class FitRow:
    engine: str
    values: dict[str, float]
    pinned: tuple[str, ...]
    borrowed: tuple[str, ...]
    anchors: tuple[str, ...]
    residuals_us: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "values_us": self.values,
            "pinned": list(self.pinned),
            "borrowed": list(self.borrowed),
            "anchors": list(self.anchors),
            "residuals_us": list(self.residuals_us),
        }


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    ab: list[ABRow] = field(default_factory=list)
    fits: list[FitRow] = field(default_factory=list)
    not_compared: list[tuple[str, str]] = field(default_factory=list)

    def groups(self) -> dict[str, dict[str, Any]]:
        """Per group: rows and MAPE, over all rows and over the held-out rows."""
        out: dict[str, dict[str, Any]] = {}
        names = sorted({r.group for r in self.rows}, key=_group_key)
        for name in names:
            rows = [r for r in self.rows if r.group == name]
            held = [r for r in rows if not r.fitted]
            out[name] = {
                "rows": len(rows),
                "mape": _mape(rows),
                "held_out_rows": len(held),
                "held_out_mape": _mape(held) if held else None,
            }
        return out

    def verdict_agreement(self) -> dict[str, Any]:
        agree = sum(r.agree for r in self.ab)
        return {"cells": len(self.ab), "agree": agree, "rate": agree / len(self.ab) if self.ab else None}

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": self.groups(),
            "verdict_agreement": self.verdict_agreement(),
            "rows": [r.to_json() for r in self.rows],
            "ab": [r.to_json() for r in self.ab],
            "engine_fits": [f.to_json() for f in self.fits],
            "not_compared": [{"reference": k, "why": v} for k, v in self.not_compared],
        }


def _group_key(name: str) -> tuple[int, str]:
    head = name.split(" (")[0]
    return (GROUP_ORDER.index(head) if head in GROUP_ORDER else len(GROUP_ORDER), name)


def _mape(rows: list[Row]) -> float:
    return float(np.mean([abs(r.error) for r in rows])) if rows else float("nan")


# Kernels -------------------------------------------------------------------------------------


def _kernel_rows(t: Transport, ref: KernelRef, group: str) -> list[Row]:
    inst = get_instance(ref.instance)
    shape = KernelShape(ref.tokens, ref.hidden, ref.topk, ref.experts, ref.dispatch_dtype)
    k = kernel_us(t, inst, inst.gpus_per_node, ref.ep, shape, ref.comms, ref.qps, ref.prefill)
    where = (
        f"{t.name} @ {ref.instance} EP{ref.ep}"
        + (f" prefill {ref.tokens} tok" if ref.prefill else "")
        + (f" {ref.dispatch_dtype} dispatch" if ref.dispatch_dtype != "fp8" else "")
    )
    fitted = group == "kernel primary"
    if ref.dispatch_us is not None and ref.combine_us is not None:
        pairs = (
            ("dispatch_us", ref.dispatch_us, k["dispatch"]),
            ("combine_us", ref.combine_us, k["combine"]),
        )
    else:
        pairs = (("total_us", ref.total, k["total"]),)
    return [Row(group, where, metric, value, _scalar(q), ref.source, fitted) for metric, value, q in pairs]


def _scalar(q: Q) -> Q:
    return Q(float(np.asarray(q.value).reshape(-1)[0]), q.unit, q.tag, q.source)


# Serving cells -------------------------------------------------------------------------------


def _fitted_pairs() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(cell, arm) pairs the engine fit used for decode, and for TTFT."""
    decode, ttft = set(), set()
    for e in load_engines().values():
        for a in e.anchors:
            decode.add((a.cell, a.arm))
            for other in (a.minus, a.over):
                if other:
                    decode.add((a.cell, other))
        ttft.add((e.ttft_anchor.cell, e.ttft_anchor.arm))
    return decode, ttft


def _model_for(cell: Cell, transport: str | None = None) -> Result:
    scenario = cell_scenario(cell, cell.engine)
    if transport is not None:
        scenario = scenario.model_copy(update={"transport": transport})
    return compute(resolve(scenario).vary(concurrency=[cell.concurrency]))


def _serving_rows(cell: Cell, decode_fit: set[tuple[str, str]], ttft_fit: set[tuple[str, str]]) -> list[Row]:
    rows = []
    sides = [("deepep", "deepep", None), ("allgather", "allgather", None)]
    if cell.versus is not None:
        sides.append(("versus", "deepep", cell.versus_transport))
    for arm_name, model_arm, transport in sides:
        measured = cell.arm(arm_name)
        if measured is None:
            continue
        result = _model_for(cell, transport)
        arm = result.arms[model_arm]
        side = transport or (cell.transport if arm_name == "deepep" else "allgather")
        for metric, attr, _unit in SERVING_METRICS:
            value = getattr(measured, metric)
            if value is None:
                continue
            group = {
                "per_user_tok_s": f"per-user ({cell.engine})",
                "itl_ms": "ITL",
                "ttft_p50_ms": "TTFT",
            }.get(metric, "aggregate")
            fitted = (cell.id, arm_name) in (ttft_fit if metric == "ttft_p50_ms" else decode_fit)
            predicted = _scalar(getattr(arm, attr))
            rows.append(Row(group, f"{cell.id} {side}", metric, value, predicted, cell.source, fitted))
    return rows


def _ab_row(cell: Cell, decode_fit: set[tuple[str, str]]) -> ABRow | None:
    dee = cell.deepep.aggregate_tok_s
    if cell.allgather is not None and cell.allgather.aggregate_tok_s and dee:
        res = _model_for(cell)
        ratio = _scalar(res.ratio_deepep_vs_alternative)
        labels = ("deepep", "dense")
        other = cell.allgather.aggregate_tok_s
        fitted = (cell.id, "deepep") in decode_fit and (cell.id, "allgather") in decode_fit
    elif cell.versus is not None and cell.versus.aggregate_tok_s and dee and cell.versus_transport:
        a = _model_for(cell).arms["deepep"].aggregate_tok_s
        b = _model_for(cell, cell.versus_transport).arms["deepep"].aggregate_tok_s
        ratio = _scalar((a / b).as_("x", f"model aggregate {cell.transport} / {cell.versus_transport}"))
        labels = (cell.transport, cell.versus_transport)
        other = cell.versus.aggregate_tok_s
        fitted = False
    else:
        return None
    return ABRow(cell.id, cell.engine, cell.concurrency, labels, dee / other, ratio, fitted)


# Scalar observations the model can be asked about -------------------------------------------


def _observation_rows() -> tuple[list[Row], list[tuple[str, str]]]:
    facts = load_facts()
    cells = load_cells()
    rows: list[Row] = []
    for conc in (4, 8, 32):
        name = f"multicomm_gain_c{conc}"
        hi, lo = cells.get(f"vllm-k8-c{conc}"), cells.get(f"vllm-k1-c{conc}")
        if name not in facts or hi is None or lo is None:
            continue
        a = _model_for(hi).arms["deepep"].aggregate_tok_s
        b = _model_for(lo).arms["deepep"].aggregate_tok_s
        ratio = _scalar((a / b).as_("x", "model aggregate EP_NUM_COMMS=8 / 1 (vLLM)"))
        rows.append(
            Row(
                "observations",
                f"vLLM c{conc} comms 8 vs 1",
                "aggregate gain",
                facts[name].value,
                ratio,
                facts[name].source,
                False,
            )
        )
    if "qp_cap_kernel_penalty" in facts:
        t = load_transports()["efa-proxy"]
        inst = get_instance("p6-b200")
        shape = KernelShape(128, 7168, 8, 256, "fp8")
        capped = kernel_us(t, inst, inst.gpus_per_node, 16, shape, 8, 2)["dispatch"]
        free = kernel_us(t, inst, inst.gpus_per_node, 16, shape, 8, 129)["dispatch"]
        ratio = _scalar((capped / free).as_("x", "model dispatch at EP_EFA_MAX_QPS 2 / 129, p6-b200 EP16"))
        fact = facts["qp_cap_kernel_penalty"]
        rows.append(
            Row(
                "observations",
                "efa-proxy p6-b200 EP16 QPs 2 vs 129",
                "dispatch penalty",
                fact.value,
                ratio,
                fact.source,
                False,
            )
        )
    isl_cell = cells.get("trt-ab-k8-c16-isl2048")
    if "ttft_ratio_isl2048" in facts and isl_cell is not None:
        res = _model_for(isl_cell)
        ratio = _scalar(
            (res.arms["deepep"].ttft_ms / res.arms["allgather"].ttft_ms).as_("x", "model TTFT DeepEP / dense")
        )
        fact = facts["ttft_ratio_isl2048"]
        rows.append(
            Row("observations", "trt-ab-k8-c16-isl2048", "TTFT ratio", fact.value, ratio, fact.source, False)
        )
    skipped = [
        (
            "ttft_ratio_short_isl, ttft_ratio_mid",
            "the regimes behind 'short ISL' and 'mid' are not published",
        ),
        (
            "qp_uncap_throughput_gain, qp_uncap_latency_change",
            "the model, shape and load of that run are not published",
        ),
        ("nic_utilisation", "the measurement method is not published"),
        ("deepep_per_user_sigma, dense_per_user_sigma", "spreads of repeated runs: they set the noise band"),
    ]
    return rows, skipped


# The report -----------------------------------------------------------------------------------


def validate() -> Report:
    """Every comparison, computed fresh from the catalogs and the model."""
    report = Report()
    for t in load_transports().values():
        report.rows += _kernel_rows(t, t.reference, "kernel primary")
        for ref in t.cross_check:
            report.rows += _kernel_rows(t, ref, "kernel cross-check")
    decode_fit, ttft_fit = _fitted_pairs()
    for cell in load_cells().values():
        if cell.role == "reference-only" or cell.isl <= 0 or cell.osl <= 0:
            report.not_compared.append((cell.id, "shape not published: the model has no scenario for it"))
            continue
        report.rows += _serving_rows(cell, decode_fit, ttft_fit)
        ab = _ab_row(cell, decode_fit)
        if ab is not None:
            report.ab.append(ab)
            report.rows.append(
                Row(
                    "A/B ratio",
                    ab.cell,
                    "aggregate ratio",
                    ab.measured_ratio,
                    ab.predicted_ratio,
                    cell.source,
                    ab.fitted,
                )
            )
    obs, skipped = _observation_rows()
    report.rows += obs
    report.not_compared += skipped
    for name in load_engines():
        rep = solve_engine(name)
        report.fits.append(
            FitRow(name, dict(rep.values), rep.pinned, rep.borrowed, rep.anchors, rep.residuals_us)
        )
    return report


def _pct(x: float | None) -> str:
    if x is None or x != x:
        return "—"
    return f"{x * 100:+.1f} %" if x < 0 or x > 0 else "+0.0 %"


def _abs_pct(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x * 100:.1f} %"


def _num(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 10 else f"{x:,.1f}"


def _line(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def render_markdown(report: Report | None = None) -> str:
    """The residual tables, deterministic (docs/model.md embeds this text)."""
    rep = report or validate()
    out = ["### Accuracy by group", ""]
    out += [_line("group", "rows", "MAPE", "held-out rows", "held-out MAPE"), "|---|---:|---:|---:|---:|"]
    for name, g in rep.groups().items():
        out.append(
            _line(name, g["rows"], _abs_pct(g["mape"]), g["held_out_rows"], _abs_pct(g["held_out_mape"]))
        )
    va = rep.verdict_agreement()
    out += ["", f"Verdict agreement on A/B cells: {va['agree']} of {va['cells']}.", ""]

    out += ["### Kernels (dispatch / combine per MoE layer)", ""]
    out += [
        _line("reference", "metric", "measured µs", "model µs", "error", "fitted", "source"),
        "|---|---|---:|---:|---:|---|---|",
    ]
    for r in rep.rows:
        if r.group.startswith("kernel"):
            out.append(
                _line(
                    r.reference,
                    r.metric,
                    _num(r.measured),
                    _num(r.predicted.scalar),
                    _pct(r.error),
                    _yes(r.fitted),
                    r.source,
                )
            )
    out += ["", "### Serving cells (model, not the measured substitution)", ""]
    out += [
        _line("cell / side", "metric", "measured", "model", "error", "fitted"),
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rep.rows:
        if not r.group.startswith("kernel") and r.group not in ("A/B ratio", "observations"):
            out.append(
                _line(
                    r.reference,
                    r.metric,
                    _num(r.measured),
                    _num(r.predicted.scalar),
                    _pct(r.error),
                    _yes(r.fitted),
                )
            )
    out += ["", "### A/B cells: ratio and verdict", ""]
    out += [
        _line(
            "cell", "engine", "conc", "measured ratio", "model ratio", "measured call", "model call", "agrees"
        ),
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for a in rep.ab:
        out.append(
            _line(
                a.cell,
                a.engine,
                a.concurrency,
                f"{a.measured_ratio:.3f}",
                f"{a.predicted_ratio.scalar:.3f}",
                a.measured_call,
                a.predicted_call,
                _yes(a.agree),
            )
        )
    obs = [r for r in rep.rows if r.group == "observations"]
    if obs:
        out += ["", "### Other published observations", ""]
        out += [_line("observation", "quantity", "measured", "model", "error"), "|---|---|---:|---:|---:|"]
        for r in obs:
            out.append(
                _line(r.reference, r.metric, _num(r.measured), _num(r.predicted.scalar), _pct(r.error))
            )
    out += ["", "### Engine fits (residual of each anchor equation)", ""]
    out += [
        _line(
            "engine",
            "launch µs/layer",
            "proxy fixed µs",
            "proxy lane µs",
            "pinned",
            "borrowed",
            "anchors",
            "residuals µs",
        ),
        "|---|---:|---:|---:|---|---|---|---|",
    ]
    for f in rep.fits:
        v = f.values
        out.append(
            _line(
                f.engine,
                f"{v['launch_us_per_layer']:,.1f}",
                f"{v['proxy_fixed_us']:,.1f}",
                f"{v['proxy_lane_us']:,.1f}",
                ", ".join(f.pinned) or "—",
                ", ".join(f.borrowed) or "—",
                ", ".join(f.anchors),
                ", ".join(f"{x:+.1f}" if abs(x) >= 0.05 else "+0.0" for x in f.residuals_us),
            )
        )
    if rep.not_compared:
        out += ["", "### Not compared", ""]
        out += [f"- {name}: {why}" for name, why in rep.not_compared]
    return "\n".join(out) + "\n"
