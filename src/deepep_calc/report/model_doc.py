"""Generated sections of docs/model.md, so the constants it documents are the ones in use.

`python -m deepep_calc.report.model_doc docs/model.md` rewrites every block between
`<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`; `tests/report/test_model_doc.py`
fails when the file and the code disagree.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def constants_table() -> str:
    from ..catalog.constants import load_constants

    lines = ["| constant | value | ± (sensitivity) | unit | tag | source |", "|---|---:|---:|---|---|---|"]
    for name, c in load_constants().items():
        lines.append(f"| `{name}` | {c.value:g} | {c.spread:g} | {c.unit} | {c.tag} | {c.source} |")
    return "\n".join(lines)


def transports_table() -> str:
    from ..catalog.transports import load_transports
    from ..fit.build import built_in_table
    from ..fit.kernels import fit_rows, kernel_rows, nvlink_rows

    table = built_in_table()
    rows = kernel_rows()
    lines = [
        "| transport | library | initiation | lanes | scale-out bandwidth | references fitted (µs) "
        "| local µs | leaving D / C µs | β D / C µs per message | signal ÷ put |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for name, t in load_transports().items():
        fit = table.transports[name]
        bw = (
            f"{t.bw_k1_gb_s:g} GB/s × K^{t.bw_comms_exponent:g} (measured curve)"
            if t.bw_k1_gb_s is not None
            else f"{t.wire_efficiency:g} × line rate (assumed)"
        )
        lanes = "EP_NUM_COMMS × QPs (K^e)" if t.comms_sensitive else str(t.issue_lanes)
        local = f"{table.nvlink_fit(t.library).alpha_us.scalar / 2:.1f}"
        if t.fabric == "nvlink":
            alpha, beta, ratio = "—", "NVLink bytes / (NVLink × fitted efficiency)", "—"
            fitted = [r.ref for r in nvlink_rows(rows) if r.transport.name == name]
        else:
            alpha = f"{fit.leaving_dispatch_us.scalar:.1f} / {fit.leaving_combine_us.scalar:.1f}"
            beta = f"{fit.beta_dispatch_us.scalar:.3f} / {fit.beta_combine_us.scalar:.3f}"
            ratio = f"{fit.signal_ratio.scalar:.2f}"
            fitted = [r.ref for r in fit_rows(t, rows)]
        where = "; ".join(
            f"{ref.instance} EP{ref.ep} T={ref.tokens}"
            + (f" h{ref.hidden}" if ref.hidden != 7168 else "")
            + (f" {ref.dispatch_dtype}" if ref.dispatch_dtype != "fp8" else "")
            + (f" {ref.qps} QPs" if t.comms_sensitive else "")
            + f": {'D ' if ref.dispatch_only else ''}{ref.dispatch_us if ref.dispatch_only else ref.total:g}"
            for ref in fitted
        )
        lines.append(
            f"| `{name}` | {t.library} | {t.initiation} | {lanes} | {bw} | {where} | {local} | {alpha} "
            f"| {beta} | {ratio} |"
        )
    return "\n".join(lines)


def hardware_table() -> str:
    """The fitted hardware and fabric constants, with what they rest on."""
    from ..fit.build import built_in_table

    t = built_in_table()
    rows = []
    for lib, f in sorted(t.nvlink.items()):
        rows += [(f"{lib} one-node dispatch + combine fixed latency", f.alpha_us)]
        rows += [(f"{lib} NVLink efficiency", f.efficiency)]
    for fabric, (d, c, r) in sorted(t.leaving.items()):
        rows += [(f"{fabric}: latency of leaving the node, dispatch", d)]
        rows += [(f"{fabric}: latency of leaving the node, combine", c)]
        rows += [(f"{fabric}: a signal's cost in puts", r)]
    rows += [
        ("GPU floor per kernel (graph replay)", t.kernel_floor_us),
        ("routed-expert read efficiency (of HBM peak)", t.expert_efficiency),
        *((f"instance factor {k}", v) for k, v in sorted(t.instance_factors.items())),
    ]
    for (engine, kind), a in sorted(t.exchange_terms.items()):
        rows += [(f"{engine} around its {kind} collectives, per exchange layer", a.fixed_us)]
        rows += [(f"{engine} around its {kind} collectives, per layer and decode token", a.token_us)]
    lines = ["| constant | value | unit | tag | rests on |", "|---|---:|---|---|---|"]
    for label, q in rows:
        lines.append(f"| {label} | {q.scalar:.4g} | {q.unit or '1'} | {q.tag} | {q.source} |")
    return "\n".join(lines)


def engine_fits_table() -> str:
    from ..fit.build import built_in_table

    t = built_in_table()
    fields = ("launch_us", "step_us", "proxy_fixed_us", "proxy_lane_us", "ttft_steps")
    lines = [
        "| engine | mode | launch µs / kernel | host µs / step | proxy fixed µs / MoE layer "
        "| proxy lane µs / MoE layer (÷ lanes) | TTFT steps | tags |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for (engine, graphs), e in sorted(t.engines.items()):
        qs = [getattr(e, f) for f in fields]
        tags = ", ".join(sorted({str(q.tag) for q in qs}))
        lines.append(
            f"| {engine} | {'graphs' if graphs else 'eager'} | "
            + " | ".join(f"{q.scalar:,.2f}" for q in qs)
            + f" | {tags} |"
        )
    lines += ["", "What each engine constant rests on:", ""]
    for (engine, graphs), e in sorted(t.engines.items()):
        for f in fields:
            q = getattr(e, f)
            lines.append(f"- {engine} {'graphs' if graphs else 'eager'} `{f}` [{q.tag}]: {q.source}")
    return "\n".join(lines)


def anchors_table() -> str:
    """Every fitted constant with the references it rests on and how those references are
    missed in sample and held out (the cross-validated report), so a constant fitted to the one
    figure it then reproduces shows as exactly determined, not as accuracy."""
    from ..accuracy.validate import cross_validate
    from ..catalog.transports import load_transports
    from ..fit.build import built_in_table
    from ..fit.kernels import HOME, fit_rows, kernel_rows, nvlink_rows, spans_tokens
    from ..fit.observations import observations

    rep = cross_validate()
    table = built_in_table()
    kernel = {(r.reference, r.source): r for r in rep.rows if r.kind == "kernel"}
    krows = kernel_rows()
    lines = [
        "| constants | anchors | figures | free constants | in-sample MAPE | held-out MAPE | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]

    def kernel_line(label: str, rows: list[Any], free: int) -> None:
        mine = [kernel[(r.ref.describe(r.transport.name), r.ref.source)] for r in rows]
        figures = sum(2 if r.ref.total_us is None and r.ref.combine_us is not None else 1 for r in rows)
        lines.append(_anchor_line(label, len(rows), figures, free, mine))

    for lib in sorted(table.nvlink):
        rows = [r for r in nvlink_rows(krows) if r.transport.library == lib]
        if rows:
            kernel_line(f"{lib} one-node α, efficiency", rows, 2)
    for name, t in load_transports().items():
        rows = fit_rows(t, krows)
        if rows:
            small = spans_tokens([r for r in rows if r.ref.instance == HOME])
            what = "leaving D / C, β D / C, signal ratio" if small else "β D / C"
            kernel_line(f"`{name}` {what}", rows, 5 if small else 2)
    fitted = [o for o in observations() if o.use == "fit"]

    def serving_line(label: str, obs: list[Any], free: int) -> None:
        ids = {o.id for o in obs}
        figures = [r for r in rep.rows if r.kind != "kernel" and r.reference in ids]
        lines.append(_anchor_line(label, len(obs), len(figures), free, figures))

    for engine, graphs in sorted(table.engines):
        mine = [o for o in fitted if o.engine == engine and o.graphs == graphs]
        if mine:  # graphs: host cost per step and TTFT steps; eager: launch, proxy x 2, TTFT
            serving_line(
                f"{engine} {'graphs' if graphs else 'eager'} engine constants", mine, 2 if graphs else 4
            )
    for engine, kind in sorted(table.exchange_terms):
        mine = [
            o
            for o in fitted
            if o.engine == engine and o.graphs and o.arm == kind and o.resolved().model.moe_layers
        ]
        serving_line(f"{engine} around its {kind} collectives (fixed, per token)", mine, 2)
    return "\n".join(lines)


def _anchor_line(label: str, anchors: int, figures: int, free: int, rows: list[Any]) -> str:
    def mape(errors: list[float]) -> str:
        return f"{100 * sum(abs(e) for e in errors) / len(errors):.1f} %" if errors else "—"

    held = [r.cv_error for r in rows if r.cv_error is not None]
    note = (
        "exactly determined: in sample it is 0 by construction; read the held-out miss"
        if figures <= free
        else ""
    )
    cells = (label, anchors, figures, free, mape([r.error for r in rows]), mape(held), note)
    return "| " + " | ".join(str(c) for c in cells) + " |"


def validation_tables() -> str:
    from .accuracy_md import validation_markdown

    return validation_markdown().strip()


def disaggregation_tables() -> str:
    from ..accuracy import disagg_refs
    from ..accuracy.validate import GroupCV, Row
    from .accuracy_md import disagg_markdown

    return disagg_markdown(disagg_refs.rows(Row), disagg_refs.group_folds(GroupCV)).strip()


SECTIONS: dict[str, Callable[[], str]] = {
    "constants": constants_table,
    "transports": transports_table,
    "hardware": hardware_table,
    "engine-fits": engine_fits_table,
    "anchors": anchors_table,
    "validation": validation_tables,
    "disaggregation": disaggregation_tables,
}

_BLOCK = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(.*?)(<!-- END GENERATED: (?P=name) -->)", re.S
)


def render(text: str) -> str:
    """Replace every generated block of `text` with its current content."""

    def fill(m: re.Match[str]) -> str:
        return f"{m.group(1)}{SECTIONS[m.group('name')]()}\n{m.group(4)}"

    return _BLOCK.sub(fill, text)


if __name__ == "__main__":  # pragma: no cover
    from ..io.safe_write import write_atomic

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/model.md")
    write_atomic(path, render(path.read_text(encoding="utf-8")), "model.md")
