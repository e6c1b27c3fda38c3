"""The terminal card: verdict, the arms side by side, the tax, memory, a tag on every number.

A modelled headline figure also shows its error band, `(760.3–901.7)`: on a narrow terminal
on a dim line under the number (so an 80-column card keeps three arms side by side), from
`term.WIDE` columns inline after it and on every banded row.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..base.quantity import Q, Tag
from ..catalog.transports import deepep_route
from ..decide.launch import run_blocks
from ..decide.verdict import ARM_LABELS
from . import disagg_view, term
from .bound_view import bound_line
from .labels import REPLICA_SUFFIX, step_label
from .view import BAND_LEGEND_SHORT, band_range

TAG_STYLE = term.TAG_STYLE
VERDICT_STYLE = {
    "dense": "bold white on dark_orange3",
    "capacity": "bold white on blue",
    "deepep": "bold white on purple",
}


def qtext(q: Q | None, digits: int = 1) -> Text:
    """A number, its unit and its tag marker (`19.6 tok/s ●`), as every terminal view shows it."""
    return term.qcell(q, digits, unit=True)


def step_words(ratio: Q, tax: Q) -> str:
    """The per-token step beside the aggregate ratio, worded so the two never seem to clash:
    a negative tax is a saving, and a longer step next to a higher aggregate says why."""
    size = abs(tax.scalar)
    tag = f"[{tax.tag}]"
    if tax.scalar > 0 and ratio.scalar > 1.0:
        return f"step {size:,.1f} ms/token longer {tag}, made up by TTFT and batch size"
    if tax.scalar > 0:
        return f"tax {size:,.1f} ms/token {tag}"
    if tax.scalar < 0:
        return f"saves {size:,.1f} ms/token {tag}"
    return f"same step {tag}"


WIDE = 100  # below this many columns the card drops the step parts and KV capacity rows
BANDED_ROWS = ("per-user decode", "aggregate", "compared on")
"""Rows whose bands a narrow card shows (on a second line); a wide one shows every band inline."""


def banded_text(q: Q | None, digits: int, inline: bool) -> Text:
    """A number with its marker and, when modelled, its band: inline, or on a dim line below."""
    out = qtext(q, digits)
    band = band_range(q, digits)
    if band:
        out.append(f" ({band})" if inline else f"\n({band})", style="dim")
    return out


def _arms_table(result: Any, v: Any, wide: bool = True, inline_bands: bool = False) -> Table:
    """The arms side by side: their figures, targets, compared aggregate, step parts, feasibility."""
    table = _arms_header(result, v)
    _add_figure_rows(table, result, wide, inline_bands)
    for label, key in target_rows(result.resolved.scenario):
        table.add_row(label, *[status_text(getattr(a, key)) for a in result.arms.values()])
    c = v.compared
    if c is not None and any(c.aggregate[n] is not a.aggregate_tok_s for n, a in result.arms.items()):
        table.add_row(
            Text("compared on", style="bold"),
            *[banded_text(c.aggregate[n], 1, inline_bands) for n in result.arms],
        )
    for part in next(iter(result.arms.values())).breakdown_ms if wide else ():
        table.add_row(
            Text(f"  step: {step_label(part)}", style="dim"),
            *[qtext(a.breakdown_ms[part], 2) for a in result.arms.values()],
        )
    _add_feasible_row(table, result)
    return table


def _arms_header(result: Any, v: Any) -> Table:
    """The empty table, one column per arm in its colour, the recommended one starred."""
    r = result.resolved
    table = Table(show_header=True, header_style="bold", expand=False, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("", no_wrap=True)  # a row label never wraps: the figures' columns give way
    for name in result.arms:
        style = (
            "magenta"
            if name == "deepep" and not r.transport.host_proxied
            else ("dark_orange" if name == "deepep" else "")
        )
        layout = getattr(result.arms[name], "layout", "")
        inner = REPLICA_SUFFIX.get(layout, "") if isinstance(layout, str) else ""
        label = ("replicas" + inner if name == "replica" else ARM_LABELS[name]) + (
            " ★" if name == v.recommended_arm else ""
        )
        table.add_column(label, style=style, justify="right")
    return table


def _add_figure_rows(table: Table, result: Any, wide: bool, inline_bands: bool) -> None:
    """The headline figures of every arm; a wide card adds the KV capacity rows."""

    def shown(label: str, q: Q | None, digits: int) -> Text:
        if inline_bands or label in BANDED_ROWS:
            return banded_text(q, digits, inline_bands)
        return qtext(q, digits)

    rows = [
        ("per-user decode", lambda a: shown("per-user decode", a.per_user_tok_s, 1)),
        ("decode step", lambda a: shown("decode step", a.step_ms, 2)),
        ("aggregate", lambda a: shown("aggregate", a.aggregate_tok_s, 1)),
        ("TTFT", lambda a: shown("TTFT", a.ttft_ms, 0)),
        ("cost", lambda a: shown("cost", a.usd_per_mtok, 2)),
        ("memory / GPU", lambda a: qtext(a.memory_gb_per_gpu)),
        ("KV headroom", lambda a: qtext(a.memory.headroom_gb)),
    ]
    if wide:
        rows += [
            ("max concurrency", lambda a: qtext(a.memory.max_concurrency, 0)),
            ("KV tokens / GPU", lambda a: qtext(a.memory.kv_tokens, 0)),
        ]
    for label, fn in rows:
        table.add_row(label, *[fn(a) for a in result.arms.values()])


def _add_feasible_row(table: Table, result: Any) -> None:
    """Whether each arm can run, and if not the short reason why."""
    short = {
        "split": "experts split",
        "reach": "one node only",
        "memory": "HBM",
        "queue": "queue",
        "left out": "left out",
    }
    table.add_row(
        "feasible",
        *[
            Text(
                "yes" if a.feasible else f"no: {short.get(a.why_code, a.why_not)}",
                style="green" if a.feasible else "red",
            )
            for a in result.arms.values()
        ],
    )


STATUS_STYLE = {"meets": "green", "misses": "red", "within the band": "yellow"}


def target_rows(s: Any) -> list[tuple[str, str]]:
    """(row label, ArmResult field) of each target the scenario sets."""
    out = []
    if s.slo_tok_s is not None:
        out.append((f"floor {s.slo_tok_s:g} tok/s/user", "slo_status"))
    if s.ttft_ms is not None:
        out.append((f"TTFT ceiling {s.ttft_ms:g} ms", "ttft_status"))
    return out


def status_text(status: str | None) -> Text:
    """A target's status: meets, misses, or within the band (the figure's band spans it)."""
    if status is None:
        return Text("n/a", style="dim")
    return Text(status, style=STATUS_STYLE.get(status, ""))


def _summary(result: Any, v: Any) -> Text:
    """The comparison that decided, in one line: the same figures the headline quotes (DeepEP
    against the alternative, or against the replicas when they won or were the rival to beat)."""
    d = v.deciding
    if d is not None and not d.is_alternative:
        a, b = d.arms
        out = Text(f"{ARM_LABELS[a] if a != 'deepep' else 'DeepEP'} / {ARM_LABELS[b]}: ", style="bold")
        parts = [f"aggregate {d.ratio.scalar:.2f}× [{d.ratio.tag}]{_band_words(d.ratio)}"]
        parts.append(
            f"per user {d.per_user_ratio.scalar:.2f}× [{d.per_user_ratio.tag}]{_band_words(d.per_user_ratio)}"
        )
        parts.append(step_words(d.ratio, d.tax_ms_per_token))
        out.append_text(term.sentence(" · ".join(parts)))
        basis = "measured on both arms" if d.basis == "measured" else "model figures of both arms"
        first = "DeepEP" if a == "deepep" else ARM_LABELS[a]
        out.append(f" ({basis}; {first} wins above {d.threshold:.2f}×)", style="dim")
        return out
    c = v.compared
    alt = ARM_LABELS[result.alternative]
    out = Text(f"DeepEP / {alt}: ", style="bold")
    if c is None or c.ratio is None:
        out.append(c.note if c is not None else "not compared")
        return out
    basis = "measured on both arms" if c.basis == "measured" else "model figures of both arms"
    parts = [f"aggregate {c.ratio.scalar:.2f}× [{c.ratio.tag}]{_band_words(c.ratio)}"]
    if c.per_user_ratio is not None:
        parts.append(
            f"per user {c.per_user_ratio.scalar:.2f}× [{c.per_user_ratio.tag}]{_band_words(c.per_user_ratio)}"
        )
    if c.tax_ms_per_token is not None:
        parts.append(step_words(c.ratio, c.tax_ms_per_token))
    out.append_text(term.sentence(" · ".join(parts)))
    out.append(f" ({basis}; DeepEP wins above {c.threshold:.2f}×)", style="dim")
    return out


def _band_words(ratio: Q) -> str:
    """` (band 0.83–1.19×)`: the ratio's band as the close-call headline words it, or ''."""
    band = band_range(ratio, 2)
    return f" (band {band})" if band else ""


def _any_band(result: Any) -> bool:
    qs = [a.aggregate_tok_s for a in result.arms.values()] + [a.per_user_tok_s for a in result.arms.values()]
    c = result.verdict.compared
    if c is not None:
        qs += [*c.aggregate.values(), c.ratio, c.per_user_ratio]
    return any(q is not None and q.banded for q in qs)


def _bullets(lines: list[str]) -> Table:
    """A bulleted list whose wrapped lines stay indented under their bullet."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=3, justify="right")
    grid.add_column()
    for line in lines:
        grid.add_row("•", term.sentence(line))
    return grid


def print_result(result: Any, console: Console | None = None) -> None:
    """The verdict card, then the run block outside it (so it pastes without box characters).

    Reads at 80 columns: the headline first, the arms, the comparison the rule made, why, what
    to watch, and a legend; the engine config, command line and exports follow, each in its
    own fenced block.
    """
    console = console or term.console()
    v = result.verdict
    r = result.resolved
    s = r.scenario
    head = Text(f" {v.symbol} {v.title} ", style=VERDICT_STYLE[v.code])
    scen = Text(
        f"{r.model.name} ({r.model.weight_dtype}) on {s.nodes}× {r.instance.name} "
        f"({r.world} GPUs), {r.engine.name} {'CUDA graphs' if s.cuda_graphs else 'eager'}, "
        f"DeepEP over {deepep_route(r.transport.name, s.nodes)}"
        f"{f' EP_NUM_COMMS={s.comms}' if r.transport.comms_sensitive and s.nodes > 1 else ''}, "
        f"concurrency {s.concurrency:,}, ISL {s.isl:,} / OSL {s.osl:,}",
        style="dim",
    )
    wide = console.width >= WIDE
    body: list[Any] = [
        term.sentence(v.headline, style="bold"),
        scen,
        *[term.sentence(note, style="dim italic") for note in result.notes],
        _arms_table(result, v, wide, inline_bands=console.width >= term.WIDE),
        _summary(result, v),
    ]
    bounds = bound_line(result, console.width - 4)
    if bounds is not None:
        body.append(bounds)
    if not wide:
        body.append(
            Text(f"(step parts and KV capacity: a terminal of {WIDE}+ columns, or --json)", style="dim")
        )
    if v.disaggregation:
        body.append(term.sentence(v.disaggregation["line"], style="bold"))
    if result.disaggregated is not None:
        body += _disagg_section(result.to_json()["disaggregated"])
    body += [Text("Why", style="bold"), _bullets(v.reasons)]
    if v.advisories:
        body += [Text("Advisories", style="bold"), _bullets(v.advisories)]
    if v.status != "nothing_fits":
        body.append(Text(f"Verdict is {v.robustness}", style="italic"))
    legend = term.legend()
    body.append(legend)
    if _any_band(result):
        body.append(Text(BAND_LEGEND_SHORT, style="dim"))
    console.print(Panel(Group(*body), title=head, title_align="left"))
    print_run_block(v.flags, console)


def _disagg_section(d: dict[str, Any]) -> list[Any]:
    """The disaggregated deployment: its figures, its two sides, where a request's time goes."""
    out: list[Any] = [
        Text(
            f"Disaggregated {d['layout']}: {d['prefill_nodes']} prefill + {d['decode_nodes']} decode "
            f"node(s), KV over {d['kv_transport']} ({d['kv_transport_label']})",
            style="bold",
        )
    ]
    figures = Table(show_header=False, box=None, pad_edge=False, expand=False)
    figures.add_column("")
    figures.add_column("", justify="right")
    for label, q, digits in disagg_view.headline_rows(d):
        qq = Q(q["value"] if q["value"] is not None else float("nan"), q["unit"], _tag(q), q["source"])
        if "low" in q:
            qq = qq.with_band(q["low"], q["high"])
        figures.add_row(label, banded_text(qq, digits, True))
    out.append(figures)
    sides = Table(show_header=True, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    sides.add_column("")
    sides.add_column("prefill side", justify="right")
    sides.add_column("decode side", justify="right")
    for label, p, q in disagg_view.side_rows(d):
        sides.add_row(label, _cell(p), _cell(q))
    out.append(sides)
    split = " · ".join(
        f"{r['label']} {r['ms']:,.0f} ms ({r['share']:.1%})" for r in disagg_view.time_split(d) if r["ms"] > 0
    )
    out.append(Text(f"A request's time: {split}", style="dim"))
    words = disagg_view.balance_words(d)
    coverage = d["coverage"][:1].upper() + d["coverage"][1:]
    out.append(Text(f"{words[:1].upper()}{words[1:]}. {coverage}.", style="dim"))
    if not d["feasible"]:
        out.append(Text(f"The split cannot run: {d['why_not']}", style="red"))
    return out


def _tag(q: dict[str, Any]) -> Any:

    return Tag.parse(q["tag"])


def _cell(value: Any) -> Text:
    if isinstance(value, dict):
        q = Q(value["value"] if value["value"] is not None else float("nan"), value["unit"], _tag(value), "")
        return qtext(q, 2 if q.unit == "ms" else 0 if q.unit == "%" else 1)
    return Text(str(value))


def print_run_block(flags: dict[str, Any], console: Console) -> None:
    """Each part of the launch in its own fenced block, unboxed and unwrapped."""
    arm = flags.get("arm")
    if arm is None:
        console.print(
            Text(
                "Run it: nothing runs as asked; apply a change above first.",
                style="bold",
            )
        )
        return
    console.print(
        Text(f"Run it ({flags['engine']}, {ARM_LABELS[arm]}): paste each block as it is", style="bold")
    )
    for caption, lang, text in run_blocks(flags):
        console.print(Text(f"# {caption}", style="dim"))
        console.print(Text(f"```{lang}\n{text}\n```"), soft_wrap=True)
    split = flags.get("disaggregated")
    if split:
        console.print(
            Text(
                f"Run it disaggregated ({split['layout']}, KV over {split['kv_transport']}): each block",
                style="bold",
            )
        )
        for caption, lang, text in disagg_view.blocks(flags):
            console.print(Text(f"# {caption}", style="dim"))
            console.print(Text(f"```{lang}\n{text}\n```"), soft_wrap=True)
