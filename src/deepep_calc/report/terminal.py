"""The terminal card: verdict, the arms side by side, the tax, memory, a tag on every number."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..quantity import Q
from ..verdict import ARM_LABELS
from . import term
from .labels import step_label

TAG_STYLE = term.TAG_STYLE
VERDICT_STYLE = {
    "dense": "bold white on dark_orange3",
    "capacity": "bold white on blue",
    "deepep": "bold white on purple",
}


def qtext(q: Q | None, digits: int = 1) -> Text:
    """A number, its unit and its tag marker (`19.6 tok/s ●`), as every terminal view shows it."""
    return term.qcell(q, digits, unit=True)


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def print_result(result: Any, console: Console | None = None) -> None:
    console = console or _console()
    v = result.verdict
    r = result.resolved
    s = r.scenario
    head = Text(f" {v.symbol} {v.title} ", style=VERDICT_STYLE[v.code])
    scen = Text(
        f"{r.model.name} ({r.model.weight_dtype}) on {s.nodes}x {r.instance.name} "
        f"({r.world} GPUs), {r.engine.name} {'CUDA graphs' if s.cuda_graphs else 'eager'}, "
        f"DeepEP over {r.transport.name}"
        f"{f' EP_NUM_COMMS={s.comms}' if r.transport.comms_sensitive else ''}, "
        f"concurrency {s.concurrency}, ISL {s.isl} / OSL {s.osl}",
        style="dim",
    )
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("")
    for name in result.arms:
        style = (
            "magenta"
            if name == "deepep" and not r.transport.host_proxied
            else ("dark_orange" if name == "deepep" else "")
        )
        label = ARM_LABELS[name] + (" ★" if name == v.recommended_arm else "")
        table.add_column(label, style=style, justify="right")
    rows = [
        ("per-user decode", lambda a: qtext(a.per_user_tok_s)),
        ("decode step", lambda a: qtext(a.step_ms, 2)),
        ("aggregate", lambda a: qtext(a.aggregate_tok_s)),
        ("TTFT", lambda a: qtext(a.ttft_ms, 0)),
        ("cost", lambda a: qtext(a.usd_per_mtok, 2)),
        ("memory / GPU", lambda a: qtext(a.memory_gb_per_gpu)),
        ("KV headroom", lambda a: qtext(a.memory.headroom_gb)),
        ("max concurrency", lambda a: qtext(a.memory.max_concurrency, 0)),
        ("KV tokens / GPU", lambda a: qtext(a.memory.kv_tokens, 0)),
    ]
    for label, fn in rows:
        table.add_row(label, *[fn(a) for a in result.arms.values()])
    for part in next(iter(result.arms.values())).breakdown_ms:
        table.add_row(
            Text(f"  step: {step_label(part)}", style="dim"),
            *[qtext(a.breakdown_ms[part], 2) for a in result.arms.values()],
        )
    table.add_row(
        "feasible",
        *[
            Text("yes" if a.feasible else f"no: {a.why_not}", style="green" if a.feasible else "red")
            for a in result.arms.values()
        ],
    )
    summary = Text()
    summary.append("DeepEP tax ")
    summary.append_text(qtext(result.tax_ms_per_token, 1))
    summary.append("   aggregate ratio ")
    summary.append_text(qtext(result.ratio_deepep_vs_alternative, 2))
    summary.append("   per-user ratio ")
    summary.append_text(qtext(result.ratio_per_user, 2))

    body: list[Any] = [scen, Text(v.headline, style="bold"), table, summary, Text("Why", style="bold")]
    body += [Text(f"  • {line}") for line in v.reasons]
    if v.advisories:
        body.append(Text("Advisories", style="bold"))
        body += [Text(f"  • {line}") for line in v.advisories]
    body.append(Text(f"Verdict is {v.robustness}", style="italic"))
    body.append(Text(f"Run it ({v.flags['engine']}, {ARM_LABELS[v.flags['arm']]})", style="bold"))
    flags = v.flags
    for arg in flags["args"]:
        body.append(Text(f"  {arg}"))
    for k, val in flags["config"].items():
        body.append(Text(f"  {k}: {val}"))
    for k, val in flags["env"].items():
        body.append(Text(f"  export {k}={val}"))
    body.append(Text(f"  {flags['cuda_graphs']}"))
    if flags.get("requires"):
        body.append(Text(f"  requires: {flags['requires']}", style="dim"))
    legend = term.legend()
    body.append(legend)
    console.print(Panel(Group(*body), title=head, title_align="left"))


def print_calibration(console: Console | None = None) -> None:
    """The measured calibration cells: what the tool prints there, and what the model predicts.

    The cell id carries EP_NUM_COMMS, concurrency and ISL (`trt-ab-k8-c16-isl2048`); a wide
    terminal also gets them as columns, and the model's per-user ratio.
    """
    from ..catalog.measured import load_cells
    from ..evaluate import compute, evaluate
    from ..fit.observations import cell_scenario
    from ..scenario import resolve

    c = console or term.console()
    wide = term.wide(c)
    notes = term.Footnotes()
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
    table = term.table(
        *cols,
        title="Measured cells: TRT-LLM, Qwen3-30B-A3B-FP8, 2x p5en, EP16, eager",
        caption="tok/s: per-user decode. model: the physics alone, no measured cell",
    )
    per_user, aggregate = [], []
    for cell in load_cells().values():
        if cell.engine != "trtllm" or cell.allgather is None or cell.role not in ("calibration", "anchor"):
            continue
        sc = cell_scenario(cell)
        res = evaluate(sc)
        model = compute(resolve(sc).vary(concurrency=[cell.concurrency]))
        md, ma = model.arms["deepep"].per_user_tok_s, model.arms["allgather"].per_user_tok_s
        modelled = Text(f"{term.number(md.value[0], 2)}/{term.number(ma.value[0], 2)} ")
        modelled.append_text(term.marker(min(md.tag, ma.tag)))
        per_user.append(res.ratio_per_user)
        aggregate.append(res.ratio_deepep_vs_alternative)
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


def _span(qs: list[Q]) -> str:
    """`0.65-0.69` (or one value): the range of a few ratios, as printed in the table."""
    lo, hi = (term.number(v, 2) for v in (min(q.scalar for q in qs), max(q.scalar for q in qs)))
    return lo if lo == hi else f"{lo}-{hi}"


def print_kernel(out: dict[str, Q], query: dict[str, Any], console: Console | None = None) -> None:
    """One MoE layer's dispatch and combine: three numbers, and their source said once."""
    c = console or term.console()
    notes = term.Footnotes()
    title = (
        f"{query['transport']} on {query['instance']}, EP{query['ep']}: {query['tokens']} tokens/rank, "
        f"hidden {query['hidden']}, top-{query['topk']} of {query['experts']}, {query['dispatch_dtype']}"
    )
    table = term.table(term.id_col(""), term.num_col("µs per layer"), term.id_col("source"))
    for key, label in (("dispatch_us", "dispatch"), ("combine_us", "combine"), ("total_us", "total")):
        q = out[key]
        table.add_row(label, term.qcell(q, 1), notes.ref(q.source))
    c.print(Text(title, style="bold"))
    c.print(table)
    c.print(term.legend())
    notes.print(c)
