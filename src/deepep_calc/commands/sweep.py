"""`deepep-calc sweep | breakeven | sensitivity | validate`: what-if at scale, and the accuracy report.

Only click is imported at module level; NumPy, the physics, plotly and rich load inside the
commands, so `deepep-calc --help` stays instant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..cli import SCENARIO_KEYS, emit_json, scenario_from, scenario_options
from .completion import LISTS

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
            shell_complete=LISTS.get(name),
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
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--md", "as_md", is_flag=True, help="print the residual tables as Markdown")
def validate_cmd(as_json: bool, as_md: bool) -> None:
    """The model against every published reference: error per row, MAPE per group, A/B verdicts."""
    from ..validate import render_markdown, validate

    report = validate()
    if as_json:
        emit_json(report.to_json())
        return
    if as_md:
        click.echo(render_markdown(report), nl=False)
        return
    _print_report(report)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def _print_report(report: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)

    def rows_table(title: str, keep: Callable[[Any], bool], source: bool) -> None:
        table = Table("reference", "metric", "measured", "model", "error", "fitted", title=title)
        if source:
            table.add_column("source", overflow="fold")
        for r in report.rows:
            if keep(r):
                cells = [
                    r.reference,
                    r.metric,
                    f"{r.measured:,.4g}",
                    _q(r.predicted, 3 if abs(r.predicted.scalar) < 10 else 1),
                    _pct(r.error),
                    "yes" if r.fitted else "no",
                ]
                table.add_row(*cells, *([r.source] if source else []))
        console.print(table)

    rows_table("Kernels (per MoE layer)", lambda r: r.group.startswith("kernel"), True)
    rows_table(
        "Serving cells (the model, not the measured substitution)",
        lambda r: not r.group.startswith("kernel") and r.group not in ("A/B ratio", "observations"),
        False,
    )
    ab = Table(
        "cell", "engine", "conc", "measured", "model", "measured call", "model call", "agrees", title="A/B"
    )
    for a in report.ab:
        ab.add_row(
            a.cell,
            a.engine,
            str(a.concurrency),
            f"{a.measured_ratio:.3f}",
            _q(a.predicted_ratio, 3),
            a.measured_call,
            a.predicted_call,
            "yes" if a.agree else "[bold red]no[/]",
        )
    console.print(ab)
    rows_table("Other published observations", lambda r: r.group == "observations", True)
    fits = Table(
        "engine", "launch µs/layer", "proxy fixed µs", "proxy lane µs", "pinned / borrowed", "residuals µs"
    )
    for f in report.fits:
        v = f.values
        fits.add_row(
            f.engine,
            f"{v['launch_us_per_layer']:,.1f}",
            f"{v['proxy_fixed_us']:,.1f}",
            f"{v['proxy_lane_us']:,.1f}",
            ", ".join([*f.pinned, *(f"{b} (borrowed)" for b in f.borrowed)]) or "—",
            ", ".join(f"{x:+.1f}" for x in f.residuals_us),
        )
    console.print(fits)
    groups = Table("group", "rows", "MAPE", "held-out rows", "held-out MAPE", title="Accuracy by group")
    for name, g in report.groups().items():
        held = "—" if g["held_out_mape"] is None else f"{g['held_out_mape'] * 100:.1f} %"
        groups.add_row(name, str(g["rows"]), f"{g['mape'] * 100:.1f} %", str(g["held_out_rows"]), held)
    console.print(groups)
    va = report.verdict_agreement()
    console.print(f"Verdict agreement on A/B cells: {va['agree']} of {va['cells']}")
    for name, why in report.not_compared:
        console.print(f"[dim]not compared: {name}: {why}[/]")
