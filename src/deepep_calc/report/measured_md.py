"""docs/MEASURED-DATA.md: the measured cells and scalar facts of `catalog/data/measured.toml`
as Markdown, generated so the document cannot drift from the data (`tests/report/test_measured_md.py`).

    python -m deepep_calc.report.measured_md > docs/MEASURED-DATA.md
"""

from __future__ import annotations

import sys

from ..catalog.measured import LEGS, load_cells, load_facts


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


def render_measured_markdown() -> str:
    """docs/MEASURED-DATA.md, generated so the document can never drift from the data."""
    lines = [
        "# Measured data",
        "",
        "Generated from `src/deepep_calc/catalog/data/measured.toml` by",
        "`python -m deepep_calc.report.measured_md > docs/MEASURED-DATA.md`. Do not edit by hand:",
        "`tests/report/test_measured_md.py` fails when this file and the catalog disagree.",
        "",
        "Every cell: Qwen3-30B-A3B-FP8 on 2x p5en.48xlarge, EP16 with attention data-parallel,",
        "eager engines, AIPerf 0.10.0 streaming, n = 1. Tag: measured.",
        "",
        "| id | role | engine | transport | comms | conc | ISL | OSL | arm | aggregate tok/s "
        "| per-user tok/s | ITL ms | TTFT p50 ms | source |",
        "|---|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    lines += _cell_rows()
    lines += ["", "`*` = not stated by the source; the value shown is assumed.", ""]
    lines += _cold_start_section()
    lines += [
        "## Scalar observations",
        "",
        "| name | value | unit | source |",
        "|---|---:|---|---|",
    ]
    lines += [f"| {f.name} | {f.value:g} | {f.unit} | {f.source} |" for f in load_facts().values()]
    return "\n".join(lines) + "\n"


def _cell_rows() -> list[str]:
    """One table row per measured leg of every cell; a `*` marks what the source did not state."""
    lines = []
    for cell in load_cells().values():
        for leg in LEGS:
            m = cell.leg(leg)
            if m is None:
                continue
            transport = cell.versus_transport if leg == "versus" else cell.transport
            if leg == "allgather":
                transport = "allgather"
            comms = f"{cell.comms}{'*' if cell.comms_assumed else ''}"
            osl = f"{cell.osl}{'*' if cell.osl_assumed or cell.shape_assumed else ''}"
            lines.append(
                f"| {cell.id} | {cell.role} | {cell.engine} | {transport} | {comms} "
                f"| {cell.concurrency} | {cell.isl} | {osl} | {leg} "
                f"| {_fmt(m.aggregate_tok_s)} | {_fmt(m.per_user_tok_s)} | {_fmt(m.itl_ms)} "
                f"| {_fmt(m.ttft_p50_ms)} | {cell.source} |"
            )
    return lines


def _cold_start_section() -> list[str]:
    """The runs whose first wave waited for a cold start, with their steady-state aggregate."""
    cold = [c for c in load_cells().values() if c.cold_start]
    if not cold:
        return []
    lines = [
        "## Cold starts (derived)",
        "",
        "Runs whose export shows their first wave of requests waiting for a cold start. The",
        "aggregate above is as measured; the steady-state one (derived) leaves the wait out.",
        "Validation shows both and keeps the measured one for its accuracy figures.",
        "",
        "| id | arm | aggregate tok/s | steady-state tok/s | how |",
        "|---|---|---:|---:|---|",
    ]
    for c in cold:
        for leg in LEGS:
            m = c.leg(leg)
            if m is not None and m.steady_aggregate_tok_s is not None:
                lines.append(
                    f"| {c.id} | {leg} | {_fmt(m.aggregate_tok_s)} "
                    f"| {_fmt(m.steady_aggregate_tok_s)} | {c.cold_start} |"
                )
    lines.append("")
    return lines


if __name__ == "__main__":  # pragma: no cover - thin generator entry point
    sys.stdout.write(render_measured_markdown())
