"""What `sweep` and `sensitivity` print on a terminal: a sweep's summary, the tornado table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..base.errors import printable
from ..base.vocabulary import SYMBOLS
from ..decide.verdict import ARM_LABELS
from ..whatif.sensitivity import fragility
from . import term


def print_sweep_summary(summary: Any, to_stderr: bool = False) -> None:
    """Rows, passes and rate, the verdict and recommended-arm counts, and where the files went.

    `to_stderr`: the rows themselves went to stdout, so the summary goes beside them.
    """
    console = Console(highlight=False, stderr=to_stderr)
    s = summary
    rate = f"{s.rows / s.seconds:,.0f} rows/s" if s.seconds > 0 else ""
    console.print(
        f"[bold]{s.rows:,}[/] scenarios in {s.combinations:,} combination(s), {s.chunks} pass(es), "
        f"{s.seconds:.2f} s ({rate})"
    )
    table = Table("verdict", "rows", "share", title="Verdicts")
    for code, count in s.verdicts.items():
        table.add_row(code, f"{count:,}", f"{count / s.rows:.1%}")
    console.print(table)
    arms = Table("recommended arm", "rows", title="Recommended arm")
    for arm, count in s.recommended.items():
        arms.add_row(arm, f"{count:,}")
    console.print(arms)
    for label, path in (("rows", s.output), ("verdict map", s.map), ("bound map", s.bound_map)):
        if path:
            console.print(Text(f"{label}: {'stdout' if path == '-' else printable(path)}"))
    if not s.output and not s.map:
        console.print("[dim]write every row with -o out.csv (or .parquet), a map with --map map.html[/]")


def print_sensitivity(rows: list[Any]) -> None:
    """The tornado as a table, largest swing first, and the one-line judgement."""
    c = term.console()
    wide = term.wide(c)
    tag = str(rows[0].ratio_low.tag) if rows else "assumed"
    table = term.table(
        term.id_col("assumed input"),
        term.num_col("value\n± spread"),
        term.num_col("low end\n→ ratio" if wide else "ratio at\nlow end"),
        term.num_col("high end\n→ ratio" if wide else "ratio at\nhigh end"),
        term.id_col("flips?"),
        title="Sensitivity of the verdict",
    )
    for row in rows:
        case = row.case
        unit = "" if case.base.unit == "1" else f" {case.base.unit}"
        low = f"{row.ratio_low.scalar:.3f} {SYMBOLS[row.verdict_low]}"
        high = f"{row.ratio_high.scalar:.3f} {SYMBOLS[row.verdict_high]}"
        table.add_row(
            case.label,
            f"{case.base.scalar:g} ± {case.spread:g}{unit}",
            f"{case.low:g} → {low}" if wide else low,
            f"{case.high:g} → {high}" if wide else high,
            Text("no") if row.survives else Text("YES", style="bold red"),
        )
    c.print(table)
    a, b = rows[0].versus if rows else ("deepep", "allgather")
    pair = f"{'DeepEP' if a == 'deepep' else ARM_LABELS[a]} / {ARM_LABELS[b]}"
    c.print(
        Text.assemble(
            (f"ratio = the model's aggregate, {pair} (the comparison that decided) ", "dim"),
            term.marker(tag),
            ("; ■ dense ▲ deepep ◆ capacity", "dim"),
        )
    )
    c.print(Text(f"Verdict is {fragility(rows)}"))
    c.print(term.legend())
