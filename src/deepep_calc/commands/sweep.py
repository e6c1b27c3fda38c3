"""`deepep-calc sweep | breakeven | sensitivity | validate`: what-if at scale, and the accuracy report.

Only click is imported at module level; NumPy, the physics, plotly and rich load inside the
commands, so `deepep-calc --help` stays instant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..cli import SCENARIO_KEYS, emit_json, scenario_from, scenario_options

SWEEP_HELP = {
    "model": "presets or config.json paths, comma-separated",
    "instance": "instances, comma-separated",
    "engine": "engines, comma-separated",
    "transport": "transports of the DeepEP arm, comma-separated",
    "alternative": "allgather,tp",
    "cuda_graphs": "false (eager), true (CUDA graphs) or both: false,true",
    "weight_dtype": "weight dtypes, comma-separated",
    "kv_dtype": "KV-cache dtypes, comma-separated",
    "calibration": "calibration profiles, comma-separated",
}
NUMERIC_HELP = "list 1,2,4 or range a:b (step 1), a:b:+K (arithmetic), a:b:xK (geometric)"


def register(app: click.Group) -> None:
    for command in (sweep_cmd, breakeven_cmd, sensitivity_cmd, validate_cmd):
        app.add_command(command)


def sweep_field_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every scenario field as a string option, so lists and ranges parse (in `sweep.py`)."""
    for name in reversed(SCENARIO_KEYS):
        f = click.option(
            f"--{name.replace('_', '-')}",
            name,
            type=str,
            default=None,
            metavar="LIST",
            help=SWEEP_HELP.get(name, NUMERIC_HELP),
        )(f)
    return f


@click.command("sweep")
@sweep_field_options
@click.option("-o", "--output", metavar="FILE", help="write every row: .csv or .parquet")
@click.option("--map", "map_path", metavar="FILE", help="verdict map: .html (plotly) or .png")
@click.option("--x", "x_axis", default="nodes", show_default=True, help="map x axis (a scenario field)")
@click.option("--y", "y_axis", default="concurrency", show_default=True, help="map y axis")
@click.option("--chunk-rows", type=int, default=200_000, show_default=True, help="rows per vectorised pass")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def sweep_cmd(
    output: str | None,
    map_path: str | None,
    x_axis: str,
    y_axis: str,
    chunk_rows: int,
    as_json: bool,
    **fields: str | None,
) -> None:
    """Every combination of lists and ranges of scenario fields, through the vectorised model.

    Example: --nodes 1,2,4,8 --concurrency 1:512:x2 --transport efa-proxy,efa-gda -o out.csv
    """
    from ..sweep import plan_sweep, run_sweep

    plan = plan_sweep({k: v for k, v in fields.items() if v is not None})
    summary = run_sweep(plan, output, map_path, x_axis, y_axis, chunk_rows=chunk_rows)
    if as_json:
        emit_json(summary.to_json())
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
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
    for label, path in (("rows", s.output), ("verdict map", s.map)):
        if path:
            console.print(f"{label}: {path}")
    if not s.output and not s.map:
        console.print("[dim]write every row with -o out.csv (or .parquet), a map with --map map.html[/]")


def _q(q: Any, digits: int = 1) -> str:
    if q is None:
        return "—"
    value = q.scalar
    shown = "n/a" if value != value else f"{value:,.{digits}f}"
    return f"{shown} {q.unit} [{q.tag}]"


@click.command("breakeven")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the answers as JSON")
def breakeven_cmd(as_json: bool, **kwargs: Any) -> None:
    """Where this scenario's verdict would change: solved, with tags."""
    from ..breakeven import breakeven

    answers = breakeven(scenario_from(kwargs))
    if as_json:
        emit_json({"answers": [a.to_json() for a in answers]})
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("question", "answer", "how it stands", title="Break-even", show_lines=True)
    for a in answers:
        digits = 1 if a.value is not None and a.value.unit in ("us", "comms", "QPs") else 0
        table.add_row(a.question, _q(a.value, digits) if a.value is not None else "—", a.note)
    Console(highlight=False).print(table)


def print_sensitivity(rows: list[Any]) -> None:
    """The tornado as a table, largest swing first, and the one-line judgement."""
    from rich.console import Console
    from rich.table import Column, Table

    from ..sensitivity import fragility
    from ..verdict import SYMBOLS

    tag = str(rows[0].ratio_low.tag) if rows else "assumed"
    table = Table(
        Column("assumed input", no_wrap=True),
        "value ± spread",
        "low: ratio",
        "high: ratio",
        "flips?",
        title="Sensitivity of the verdict",
        caption=f"ratio = model aggregate DeepEP / alternative \\[{tag}]; ■ dense ▲ deepep ◆ capacity",
    )
    for row in rows:
        c = row.case
        unit = "" if c.base.unit == "1" else f" {c.base.unit}"
        table.add_row(
            c.label,
            f"{c.base.scalar:g} ± {c.spread:g}{unit}",
            f"{c.low:g}: {row.ratio_low.scalar:.3f} {SYMBOLS[row.verdict_low]}",
            f"{c.high:g}: {row.ratio_high.scalar:.3f} {SYMBOLS[row.verdict_high]}",
            "no" if row.survives else "[bold red]YES[/]",
        )
    console = Console(highlight=False)
    console.print(table)
    console.print(f"Verdict is {fragility(rows)}")


@click.command("sensitivity")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the tornado as JSON")
def sensitivity_cmd(as_json: bool, **kwargs: Any) -> None:
    """Which assumed constants move the verdict (each at ± its stated spread)."""
    from ..sensitivity import fragility, sensitivity

    rows = sensitivity(scenario_from(kwargs))
    if as_json:
        emit_json({"robustness": fragility(rows), "rows": [r.to_json() for r in rows]})
        return
    print_sensitivity(rows)


@click.command("validate")
@click.option(
    "--cv", "cross_validated", is_flag=True, help="also predict each reference with a fit that never saw it"
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--md", "as_md", is_flag=True, help="print the tables as Markdown")
def validate_cmd(cross_validated: bool, as_json: bool, as_md: bool) -> None:
    """The model against every published reference, in sample and (--cv) out of sample."""
    from ..validate import render_markdown, validate

    report = validate(cross_validated=cross_validated)
    if as_json:
        emit_json(report.to_json())
        return
    if as_md:
        click.echo(render_markdown(report), nl=False)
        return
    _print_report(report)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:+.1f} %"


def _print_report(report: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    kinds = Table("figure", "rows", "in-sample MAPE", "held-out MAPE", title="Accuracy by kind of figure")
    for name, g in report.kinds().items():
        held = "—" if g["held_out_mape"] is None else f"{g['held_out_mape'] * 100:.1f} %"
        kinds.add_row(name, str(g["rows"]), f"{g['mape'] * 100:.1f} %", held)
    console.print(kinds)
    ab = Table("pair", "measured", "model", "held-out", "measured call", "held-out call", title="A/B pairs")
    for a in report.ab:
        held = "—" if a.held_out_ratio is None else f"{a.held_out_ratio:.2f}"
        call = a.predicted_call if a.agree else f"[bold red]{a.predicted_call}[/]"
        ab.add_row(a.pair, f"{a.measured_ratio:.2f}", f"{a.predicted_ratio:.2f}", held, a.measured_call, call)
    console.print(ab)
    worst = sorted(
        (r for r in report.rows if r.in_scope),
        key=lambda r: -abs(r.cv_error if r.cv_error is not None else r.error),
    )[:8]
    misses = Table("reference", "metric", "measured", "model", "error", "held-out", title="Largest misses")
    for r in worst:
        misses.add_row(
            r.reference,
            r.metric,
            f"{r.measured:,.4g}",
            f"{r.predicted:,.4g}",
            _pct(r.error),
            _pct(r.cv_error),
        )
    console.print(misses)
    if not report.cross_validated:
        console.print("[dim]run with --cv for the out-of-sample errors and the leave-a-group-out folds[/]")
    for g in report.group_cv:
        folds = ", ".join(f"{name} {m * 100:.0f} %" for name, _, m in g.folds)
        console.print(f"leave one {g.by} out: {folds}")
    for name, why in report.not_compared:
        console.print(f"[dim]not compared: {name}: {why}[/]")
