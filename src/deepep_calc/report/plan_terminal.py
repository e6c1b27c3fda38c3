"""The plan in a terminal: the answer, the frontier table, the misses; readable at 80 columns.

Every number comes from `Plan` (the same objects `--json` prints); a tag letter follows each
(m measured, d derived, a assumed) so the provenance survives a pipe without colour. A
configuration whose evidence is assumed carries a dagger; its notes are listed below.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from ..base.quantity import Q
from .terminal import TAG_STYLE

LETTER = {"measured": "m", "derived": "d", "assumed": "a"}


def tagged(q: Q, digits: int) -> Text:
    v = q.scalar
    shown = "n/a" if v != v else f"{v:,.{digits}f}"
    t = Text(shown + " ")
    tag = str(q.tag)
    t.append(LETTER[tag], style=TAG_STYLE[tag])
    return t


def _band(q: Q, digits: int) -> str:
    if not q.banded:
        return ""
    return f" (band {float(q.low):,.{digits}f}-{float(q.high):,.{digits}f})"


def _targets(plan: Any) -> str:
    r = plan.request
    load = f"{r.concurrency:,} in flight" if r.concurrency is not None else f"{r.request_rate:g} requests/s"
    parts = [f"{r.model}", f"ISL {r.isl:,} / OSL {r.osl:,}", load]
    if r.slo_tok_s is not None:
        parts.append(f">= {r.slo_tok_s:g} tok/s per user")
    if r.ttft_ms is not None:
        parts.append(f"TTFT <= {r.ttft_ms:g} ms")
    if r.budget_per_hour is not None:
        parts.append(f"<= {r.budget_per_hour:g} $/h")
    return " | ".join(parts)


def price_line(plan: Any) -> str:
    """Which kinds of price were ranked together, and which instances were left out for theirs."""
    from ..catalog.hardware import PRICE_KIND_WORDS

    k = plan.price_kinds()
    ranked = k["ranked"]
    kinds = {n: kind for n, kind in k["by_instance"].items() if kind is not None}
    if len(set(kinds.values()) - {"given"}) < 2 and not k["mixed_on_purpose"]:
        return ""
    if k["mixed_on_purpose"]:
        shown = ", ".join(f"{n} ({PRICE_KIND_WORDS[kind]})" for n, kind in kinds.items())
        return f"Prices of different kinds ranked together, as asked: {shown}"
    inside = [n for n, kind in kinds.items() if kind in (*ranked, "given")]
    outside = [
        f"{n} ({PRICE_KIND_WORDS[kind]})" for n, kind in kinds.items() if kind not in (*ranked, "given")
    ]
    words = " or ".join(PRICE_KIND_WORDS[r] for r in ranked)
    return (
        f"Ranked on {words} prices only ({', '.join(inside)}); searched, not ranked: "
        f"{', '.join(outside)} (--price-kinds all ranks them together)"
    )


def points_table(points: list[Any], title: str, misses: bool = False) -> Table:
    """One row per point: configuration (two lines), the four figures, whether it meets."""
    table = Table(
        Column("#", justify="right", no_wrap=True),
        Column("configuration", ratio=1, min_width=22, overflow="fold"),
        Column("tok/s/user", justify="right", no_wrap=True),
        Column("$/Mtok", justify="right", no_wrap=True),
        Column("TTFT ms", justify="right", no_wrap=True),
        Column("GB/GPU", justify="right", no_wrap=True),
        Column("ok", justify="center", no_wrap=True),
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
        expand=False,
    )
    for n, p in enumerate(points, start=1):
        c = p.config
        dtype = f" {c['weight_dtype']}" if c.get("weight_dtype") else ""
        head = (
            f"{c['nodes']}x {c['instance']} {c['engine']} {'graphs' if c['cuda_graphs'] else 'eager'}{dtype}"
        )
        arm = p.label.partition(", ")[2]
        cfg = Text(head)
        cfg.append("\n" + arm, style="dim")
        if p.evidence == "assumed":  # on the short line: at 80 columns the long one wraps it alone
            cfg.append(" †", style="yellow")
        for note in p.band_notes(short=True):  # a target inside this point's band: said beside it
            cfg.append("\n" + note, style="yellow")
        if misses and (p.misses or p.change):
            lines = [*p.misses, *([f"-> {p.change}"] if p.change else [])]
            cfg.append("\n" + "\n".join(lines), style="red")
        f = p.figures
        table.add_row(
            str(n),
            cfg,
            tagged(f["per_user_tok_s"], 1),
            tagged(f["usd_per_mtok"], 2),
            tagged(f["ttft_ms"], 0),
            tagged(f["memory_gb_per_gpu"], 1),
            Text("yes", style="green") if p.meets_targets else Text("no", style="red"),
        )
    return table


def print_plan(plan: Any, console: Console | None = None) -> None:
    """Header, the answer (or the misses and changes), then the frontier."""
    console = console or Console(highlight=False)
    _print_plan_header(plan, console)
    if plan.best is not None:
        _print_best(plan, console)
    else:
        _print_no_answer(plan, console)
    if plan.frontier:
        console.print(
            points_table(
                plan.frontier, "Frontier: per-user tok/s against $/Mtok (none beats another on both)"
            )
        )
    else:
        console.print(Text("No configuration fits and sustains the load: there is no frontier.", style="red"))
    _print_assumed_notes(plan, console)
    legend = Text("tags: ")
    for tag, style in TAG_STYLE.items():
        legend.append(f"{LETTER[tag]} {tag}  ", style=style)
    console.print(legend)


def _print_plan_header(plan: Any, console: Console) -> None:
    """The targets, how much was searched (and skipped, why), and how prices were ranked."""
    console.print(Text(f"Plan: {_targets(plan)}", style="bold"))
    skipped = ""
    if plan.skipped:
        why = "; ".join(f"{reason}: {count:,}" for reason, count in plan.skipped_reasons.items())
        skipped = f", {plan.skipped:,} skipped ({why})"
    console.print(
        Text(f"Searched {plan.searched:,} configurations in {plan.seconds:.2f} s{skipped}", style="dim")
    )
    line = price_line(plan)
    if line:
        console.print(Text(line, style="dim"))
    console.print()


def _print_best(plan: Any, console: Console) -> None:
    """The configuration that meets every target: its cost, per-user rate, TTFT and memory."""
    b = plan.best
    f = b.figures
    heading = "Chosen, meeting every target" if b.chosen_over else "Cheapest meeting every target"
    console.print(Text(heading, style="bold green"))
    console.print(Text(f"  {b.label}" + (" †" if b.evidence == "assumed" else "")))
    line = Text("  ")
    line.append_text(tagged(f["usd_per_mtok"], 3))
    line.append(f" $/Mtok{_band(f['usd_per_mtok'], 3)}, ")
    line.append_text(tagged(b.usd_per_hour, 2))
    line.append(" $/h")
    console.print(line)
    line = Text("  ")
    line.append_text(tagged(f["per_user_tok_s"], 1))
    line.append(" tok/s per user, TTFT ")
    line.append_text(tagged(f["ttft_ms"], 0))
    line.append(" ms, ")
    line.append_text(tagged(f["memory_gb_per_gpu"], 1))
    line.append(" GB per GPU")
    console.print(line)
    for note in b.band_notes():
        console.print(Text(f"  {note}", style="yellow"))
    if b.config.get("concurrency") and plan.request.request_rate is not None:
        console.print(
            Text(f"  runs {b.config['concurrency']:,} sequences at once (Little's law)", style="dim")
        )


def _print_no_answer(plan: Any, console: Console) -> None:
    """Nothing meets every target: the single changes that would, and the closest misses."""
    console.print(Text("Nothing in the search meets every target.", style="bold red"))
    for change in plan.changes:
        console.print(Text(f"  would meet them: {change}"))
    if not plan.changes:
        console.print(Text("  no single change of a target, the node limit or the instances meets them all"))
    if plan.nearest_misses:
        console.print(points_table(plan.nearest_misses, "Closest misses", misses=True))


def _print_assumed_notes(plan: Any, console: Console) -> None:
    """Why the daggered configurations lie outside the measured evidence (at most six reasons)."""
    dagger = [
        p
        for p in [plan.best, *plan.frontier, *plan.nearest_misses]
        if p is not None and p.evidence == "assumed"
    ]
    if dagger:
        reasons = dict.fromkeys(n for p in dagger for n in p.notes if "(assumed)" in n or "borrowed" in n)
        console.print(
            Text("† outside the measured evidence (--measured-only leaves it out):", style="yellow")
        )
        for text in list(reasons)[:6]:
            console.print(Text(f"  {text}", style="dim"))


def print_best_card(plan: Any, result: Any, console: Console | None = None) -> None:
    """The verdict card of the chosen configuration (`whatif.plan.card.card_for`: arms the plan
    left out are left out of the card too, so it recommends the plan's choice), and its launch."""
    from .terminal import print_result

    console = console or Console(highlight=False)
    print_result(result, console)  # the card on the plan's terms: its choice, its one launch block
