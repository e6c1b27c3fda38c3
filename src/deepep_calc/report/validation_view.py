"""What `validate` prints on a terminal: the model against every reference, in and out of
sample, the A/B calls, the bands and their coverage, and the disaggregated deployments."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from ..accuracy import disagg_refs
from . import term


def _print_disaggregated(report: Any, c: Any) -> None:
    """The disaggregated deployments: MAPE per kind of figure over the compared rows, the band
    out-of-range disaggregated figures carry, and their leave-a-group-out folds."""
    rows = report.disaggregated
    if not rows:
        return
    table = term.table(
        term.id_col("figure"),
        term.num_col("compared\nrows"),
        term.num_col("MAPE"),
        term.num_col("check-only\nrows"),
        title="Disaggregated deployments (never fitted)",
    )
    for kind in ("step", "ttft", "aggregate"):
        mine = [r for r in rows if r.kind == kind]
        compared = [abs(r.error) for r in mine if r.in_scope]
        mape = f"{sum(compared) / len(compared) * 100:.1f} %" if compared else "—"
        table.add_row(kind, str(len(compared)), mape, str(len(mine) - len(compared)))
    c.print(table)
    bands = disagg_refs.bands(rows)
    if bands:
        shown = ", ".join(f"{k} {lo:.2f}-{hi:.2f}" for k, (lo, hi) in sorted(bands.items()))
        c.print(Text(f"band of disaggregated figures outside the references' range: {shown}", style="dim"))
    for g in report.disaggregated_cv:
        folds = ", ".join(f"{name} {m * 100:.0f} %" for name, _, m in g.folds)
        c.print(Text(f"leave one out ({g.by}): {folds}"))


def _published(x: float) -> str:
    """A reference figure as published: four significant digits, thousands grouped."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _pct(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x * 100:+.1f} %"


def print_report(report: Any, sources: bool = False) -> None:
    """The accuracy report in tables that fit 80 columns: a summary per kind of figure, the A/B
    pairs, the largest misses and the leave-a-group-out folds; every row with --md or --json."""
    c = term.console()
    notes = term.Footnotes()
    _print_kinds(report, c)
    _print_ab(report, c)
    c.print(_misses_table(report, sources, notes))
    if not report.cross_validated:
        c.print(
            Text("run with --cv for the out-of-sample errors and the leave-a-group-out folds", style="dim")
        )
    for g in report.group_cv:
        folds = ", ".join(f"{name} {m * 100:.0f} %" for name, _, m in g.folds)
        c.print(Text(f"leave one {g.by} out: {folds}"))
    _print_disaggregated(report, c)
    for name, why in report.not_compared:
        c.print(Text(f"not compared: {name}: {why}", style="dim"))
    c.print(Text("every row: deepep-calc validate --md (or --json)", style="dim"))
    if sources:
        notes.print(c)
    else:
        c.print(term.sources_hint("deepep-calc validate"))


def _print_kinds(report: Any, c: Any) -> None:
    """MAPE in and out of sample per kind of figure, then the measured / unmeasured kernel split."""
    kinds = term.table(
        term.id_col("figure"),
        term.num_col("rows"),
        term.num_col("in-sample\nMAPE"),
        term.num_col("held-out\nMAPE"),
        title="Accuracy by kind of figure",
    )
    for name, g in report.kinds().items():
        held = "—" if g["held_out_mape"] is None else f"{g['held_out_mape'] * 100:.1f} %"
        kinds.add_row(name, str(g["rows"]), f"{g['mape'] * 100:.1f} %", held)
    c.print(kinds)
    split = report.kernel_split() if report.cross_validated else {}
    if split and split["unmeasured"]["rows"]:
        m, u = split["measured"], split["unmeasured"]
        c.print(
            f"kernel held out: {m['rows']} rows refitted from other references "
            f"{m['held_out_mape'] * 100:.1f} %;\n{u['rows']} rows of an unmeasured transport "
            f"(its class's median) {u['held_out_mape'] * 100:.1f} %"
        )


def _print_ab(report: Any, c: Any) -> None:
    """The A/B pairs' ratios and calls (a wrong held-out call in red), then their steady-state lines."""
    ab = term.table(
        term.id_col("pair"),
        term.num_col("measured"),
        term.num_col("model"),
        term.num_col("held-out"),
        term.id_col("measured\ncall"),
        term.id_col("held-out\ncall"),
        title="A/B pairs: DeepEP / other side",
    )
    for a in report.ab:
        held = "—" if a.held_out_ratio is None else f"{a.held_out_ratio:.2f}"
        call = Text(a.predicted_call) if a.agree else Text(a.predicted_call, style="bold red")
        ab.add_row(a.pair, f"{a.measured_ratio:.2f}", f"{a.predicted_ratio:.2f}", held, a.measured_call, call)
    c.print(ab)
    for a in report.ab:
        if a.steady_ratio is not None:
            c.print(Text(a.steady_line() + ".", style="dim"))


def _misses_table(report: Any, sources: bool, notes: term.Footnotes) -> Table:
    """The eight in-scope rows the model misses most (held out where it was), two lines each."""
    worst = sorted(
        (r for r in report.rows if r.in_scope),
        key=lambda r: -abs(r.cv_error if r.cv_error is not None else r.error),
    )[:8]
    cols = [
        term.text_col("reference"),  # a shape's long name wraps rather than pushing numbers off
        term.num_col("measured"),
        term.num_col("model"),
        term.num_col("error"),
        term.num_col("held-out"),
    ]
    if sources:
        cols.append(term.id_col("src"))
    misses = term.table(*cols, title="Largest misses")
    for r in worst:
        misses.add_row(Text(r.reference, style="bold"), "", "", "", "", *([""] if sources else []))
        misses.add_row(
            f"  {r.metric}",
            _published(r.measured),
            _published(r.predicted),
            _pct(r.error),
            _pct(r.cv_error),
            *([notes.ref(r.source)] if sources else []),
        )
    return misses
