"""Generated sections of docs/model.md, so the constants it documents are the ones in use.

`python -m deepep_calc.report.model_doc docs/model.md` rewrites every block between
`<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`; `tests/test_docs.py`
fails when the file and the code disagree.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path


def constants_table() -> str:
    from ..catalog.constants import load_constants

    lines = ["| constant | value | ± (sensitivity) | unit | tag | source |", "|---|---:|---:|---|---|---|"]
    for name, c in load_constants().items():
        lines.append(f"| `{name}` | {c.value:g} | {c.spread:g} | {c.unit} | {c.tag} | {c.source} |")
    return "\n".join(lines)


def transports_table() -> str:
    from ..catalog.transports import load_transports
    from ..fit.build import built_in_table
    from ..fit.kernels import fit_rows, kernel_rows

    table = built_in_table()
    rows = kernel_rows()
    lines = [
        "| transport | initiation | lanes | scale-out bandwidth | references fitted (D+C µs) "
        "| α D / C µs | β D / C µs per remote selection |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for name, t in load_transports().items():
        fit = table.transports[name]
        bw = (
            f"{t.bw_k1_gb_s:g} GB/s × K^{t.bw_comms_exponent:g} (measured curve)"
            if t.bw_k1_gb_s is not None
            else f"{t.wire_efficiency:g} × line rate (assumed)"
        )
        lanes = "EP_NUM_COMMS × QPs (K^e)" if t.comms_sensitive else str(t.issue_lanes)
        if t.fabric == "nvlink":
            half = table.nvlink_alpha_us.scalar / 2
            alpha, beta = f"{half:.1f} / {half:.1f}", "NVLink bytes / (NVLink × fitted efficiency)"
            fitted = [r.ref for r in rows if r.transport.name == name and r.ref.role == "fit"]
        else:
            alpha = f"{fit.alpha_dispatch_us.scalar:.1f} / {fit.alpha_combine_us.scalar:.1f}"
            beta = f"{fit.beta_dispatch_us.scalar:.3f} / {fit.beta_combine_us.scalar:.3f}"
            fitted = [r.ref for r in fit_rows(t, rows)]
        where = "; ".join(
            f"{ref.instance} EP{ref.ep} T={ref.tokens}"
            + (f" {ref.dispatch_dtype}" if ref.dispatch_dtype != "fp8" else "")
            + (f" {ref.qps} QPs" if t.comms_sensitive else "")
            + f": {'D ' if ref.dispatch_only else ''}{ref.dispatch_us if ref.dispatch_only else ref.total:g}"
            for ref in fitted
        )
        lines.append(f"| `{name}` | {t.initiation} | {lanes} | {bw} | {where} | {alpha} | {beta} |")
    return "\n".join(lines)


def hardware_table() -> str:
    """The fitted hardware and fabric constants, with what they rest on."""
    from ..fit.build import built_in_table

    t = built_in_table()
    rows = [
        ("NVLink-only dispatch + combine fixed latency", t.nvlink_alpha_us),
        ("NVLink efficiency of the kernels", t.nvlink_efficiency),
        ("GPU floor per kernel (graph replay)", t.kernel_floor_us),
        ("routed-expert read efficiency (of HBM peak)", t.expert_efficiency),
        ("small collective, one NVLink step", t.hop_nvlink_us),
        ("small collective, one EFA step", t.hop_efa_us),
        *((f"instance factor {k}", v) for k, v in sorted(t.instance_factors.items())),
    ]
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


def validation_tables() -> str:
    try:
        from ..whatif.validate import render_markdown
    except ImportError:  # pragma: no cover - validate ships with the package
        return "_validation report not available_"
    return render_markdown().strip()


def disaggregation_tables() -> str:
    from ..whatif import disagg_refs
    from ..whatif.validate import GroupCV, Row

    return disagg_refs.render_markdown(disagg_refs.rows(Row), disagg_refs.group_folds(GroupCV)).strip()


SECTIONS: dict[str, Callable[[], str]] = {
    "constants": constants_table,
    "transports": transports_table,
    "hardware": hardware_table,
    "engine-fits": engine_fits_table,
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
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/model.md")
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
