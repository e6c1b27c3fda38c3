"""The reference views of the terminal: the measured calibration cells beside the model, and
one MoE layer's dispatch and combine (the `kernel` command) with the parts that gate them.

They are the tool's evidence, not a scenario's answer, so they live apart from the card.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..base.quantity import Q, Tag
from ..catalog.hardware import get_instance
from ..catalog.transports import kernel_route
from . import term


def print_calibration(console: Console | None = None) -> None:
    """The measured calibration cells: what the tool prints there, and what the model predicts.

    The cell id carries EP_NUM_COMMS, concurrency and ISL (`trt-ab-k8-c16-isl2048`); a wide
    terminal also gets them as columns, and the model's per-user ratio.
    """
    from ..catalog.measured import load_cells

    c = console or term.console()
    wide = term.wide(c)
    notes = term.Footnotes()
    table = _calibration_table(wide)
    per_user, aggregate = [], []
    for cell in load_cells().values():
        if cell.engine != "trtllm" or cell.allgather is None or cell.role not in ("calibration", "anchor"):
            continue
        row, res = _calibration_row(cell, wide, notes)
        per_user.append(res.ratio_per_user)
        aggregate.append(res.ratio_deepep_vs_alternative)
        table.add_row(*row)
    c.print(table)
    if per_user and aggregate:
        c.print(
            Text(
                f"Per-user ratio {_span(per_user)}, aggregate ratio {_span(aggregate)}: aggregate also "
                "absorbs TTFT and the benchmark's ramp. One run per cell (n = 1).",
                style="dim",
            )
        )
    c.print(term.legend())
    if wide:
        notes.print(c)


def _calibration_table(wide: bool) -> Table:
    """The empty table of calibration cells; a wide terminal adds the cell's settings and source."""
    cols = [term.id_col("cell")]
    if wide:
        cols += [term.num_col("comms"), term.num_col("conc"), term.num_col("ISL")]
    cols += [
        term.num_col("DeepEP\ntok/s"),
        term.num_col("dense\ntok/s"),
        term.num_col("tax\nms/token"),
        term.num_col("aggregate\nratio"),
        term.num_col("model tok/s\nDeepEP/dense"),
    ]
    if wide:
        cols += [term.num_col("per-user\nratio"), term.id_col("src")]
    return term.table(
        *cols,
        title="Measured cells: TRT-LLM, Qwen3-30B-A3B-FP8, 2x p5en, EP16, eager",
        caption="tok/s: per-user decode. model: the physics alone, no measured cell",
    )


def _calibration_row(cell: Any, wide: bool, notes: term.Footnotes) -> tuple[list[Any], Any]:
    """One cell's row (what the tool prints there, then the physics alone) and its result."""
    from ..estimate.compute import compute
    from ..fit.observations import cell_scenario
    from ..question.scenario import resolve

    r = resolve(cell_scenario(cell))
    res = compute(r)  # the table shows arms and ratios, no verdict: no wording to build
    model = compute(r.vary(concurrency=cell.concurrency))  # the model's figures, no cell
    md, ma = model.arms["deepep"].per_user_tok_s, model.arms["allgather"].per_user_tok_s
    modelled = Text(f"{term.number(md.scalar, 2)}/{term.number(ma.scalar, 2)} ")
    modelled.append_text(term.marker(min(md.tag, ma.tag)))
    row: list[Any] = [cell.id]
    if wide:
        row += [str(cell.comms), str(cell.concurrency), str(cell.isl)]
    row += [
        term.qcell(res.arms["deepep"].per_user_tok_s, 2),
        term.qcell(res.arms["allgather"].per_user_tok_s, 2),
        term.qcell(res.tax_ms_per_token, 1),
        term.qcell(res.ratio_deepep_vs_alternative, 2),
        modelled,
    ]
    if wide:
        row += [term.qcell(res.ratio_per_user, 2), notes.ref(cell.source)]
    return row, res


def _span(qs: list[Q]) -> str:
    """`0.65-0.69` (or one value): the range of a few ratios, as printed in the table."""
    lo, hi = (term.number(v, 2) for v in (min(q.scalar for q in qs), max(q.scalar for q in qs)))
    return lo if lo == hi else f"{lo}-{hi}"


PART_LABELS = {
    "local": "local (the library's own)",
    "leaving": "leaving the node",
    "data": "data messages",
    "signals": "signals",
    "wire": "wire bytes",
    "nvlink": "NVLink bytes",
}


def print_kernel(out: dict[str, Any], query: dict[str, Any], console: Console | None = None) -> None:
    """One MoE layer's dispatch and combine: three numbers, their source said once, and the
    model's parts of each direction with the pipe that gates it."""
    c = console or term.console()
    notes = term.Footnotes()
    tokens = f"{query['tokens']} token{'' if query['tokens'] == 1 else 's'}"
    gpn = get_instance(query["instance"]).gpus_per_node
    title = (
        f"{kernel_route(query['transport'], query['ep'], gpn)} on {query['instance']}, "
        f"EP{query['ep']}: {tokens}/rank, "
        f"hidden {query['hidden']}, top-{query['topk']} of {query['experts']}, {query['dispatch_dtype']}"
    )
    table = term.table(term.id_col(""), term.num_col("µs per layer"), term.id_col("source"))
    for key, label in (("dispatch_us", "dispatch"), ("combine_us", "combine"), ("total_us", "total")):
        q = out[key]
        table.add_row(label, term.qcell(q, 1), notes.ref(q.source))
    c.print(Text(title, style="bold"))
    c.print(table)
    measured = out["measurements"]
    if len(measured) > 1 or (measured and out["dispatch_us"].tag != Tag.MEASURED):
        shown = out["dispatch_us"].source if out["dispatch_us"].tag == Tag.MEASURED else None
        runs = "; ".join(
            f"{'▸ ' if src == shown else ''}{total:,.1f} µs ({what or 'as published'})"
            for what, total, src in measured
        )
        above = (
            "▸ is the one above" if shown else "none ran at these settings: the figures above are the model's"
        )
        term.print_prose(c, f"Published runs of this cell: {runs} ({above}).")
    parts = out["parts_us"]
    split = term.table(term.id_col("model's parts, µs"), term.num_col("dispatch"), term.num_col("combine"))
    for name, label in PART_LABELS.items():
        split.add_row(label, *(term.qcell(parts[d][name], 1) for d in ("dispatch", "combine")))
    c.print(split)
    binds = out["binds"]
    term.print_prose(
        c,
        "local + the slowest of the concurrent pipes (leaving the node; data messages + signals "
        f"through the issue path; wire; NVLink). Gates: dispatch {_PIPE_WORDS[binds['dispatch']]}, "
        f"combine {_PIPE_WORDS[binds['combine']]}.",
    )
    c.print(term.legend())
    notes.print(c)


_PIPE_WORDS = {
    "leaving": "the latency of leaving the node",
    "messages": "the issue path (messages)",
    "wire": "the wire",
    "nvlink": "NVLink",
}
