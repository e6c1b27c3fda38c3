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
    from ..physics.comm import fixed_latency_us

    lines = [
        "| transport | initiation | ops/token | op µs | scale-out bandwidth | primary reference "
        "(D / C µs) | α dispatch µs | α combine µs |",
        "|---|---|---:|---:|---|---|---:|---:|",
    ]
    for name, t in load_transports().items():
        a_d, a_c = fixed_latency_us(name)
        ref = t.reference
        refs = (
            f"{ref.dispatch_us:g} / {ref.combine_us:g}"
            if ref.dispatch_us is not None and ref.combine_us is not None
            else f"D+C {ref.total:g}"
        )
        bw = (
            f"{t.bw_k1_gb_s:g} GB/s × K^{t.bw_comms_exponent:g} (measured curve)"
            if t.bw_k1_gb_s is not None
            else f"{t.wire_efficiency:g} × line rate (assumed)"
        )
        lines.append(
            f"| `{name}` | {t.initiation} | {t.ops_per_token} | {t.op_us:g} | {bw} | "
            f"{ref.instance} EP{ref.ep}: {refs} | {a_d.scalar:.1f} | {a_c.scalar:.1f} |"
        )
    return "\n".join(lines)


def engine_fits_table() -> str:
    from ..catalog.engines import load_engines
    from ..physics.fit import engine_fit, solve_engine

    lines = [
        "| engine | launch µs / layer | proxy fixed µs / MoE layer | proxy lane µs / MoE layer (÷ K) "
        "| TTFT queue steps | anchors | pinned / borrowed | anchor residuals (µs) |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for name in load_engines():
        rep = solve_engine(name)
        fit = engine_fit(name)
        v = rep.values
        notes = ", ".join(
            [*(f"{p} pinned to 0" for p in rep.pinned), *(f"{b} borrowed" for b in rep.borrowed)]
        )
        res = ", ".join(f"{x:+.1f}" for x in rep.residuals_us)
        lines.append(
            f"| {name} | {v['launch_us_per_layer']:.1f} | {v['proxy_fixed_us']:.1f} | "
            f"{v['proxy_lane_us']:.1f} | {fit.ttft_steps.scalar:.2f} | {', '.join(rep.anchors)} | "
            f"{notes or '—'} | {res} |"
        )
    return "\n".join(lines)


def validation_tables() -> str:
    try:
        from ..validate import render_markdown
    except ImportError:  # pragma: no cover - validate ships with the package
        return "_validation report not available_"
    return render_markdown().strip()


SECTIONS: dict[str, Callable[[], str]] = {
    "constants": constants_table,
    "transports": transports_table,
    "engine-fits": engine_fits_table,
    "validation": validation_tables,
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
