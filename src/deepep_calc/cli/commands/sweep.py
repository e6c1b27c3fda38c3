"""`deepep-calc sweep | breakeven | sensitivity | validate`: what-if at scale, and the accuracy report.

Only click is imported at module level; NumPy, the physics, plotly and rich load inside the
commands, so `deepep-calc --help` stays instant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..completion import LISTS
from ..options import (
    MODE_FLAGS,
    SCENARIO_FLAGS,
    SIDE_MODE_FLAGS,
    ListOf,
    emit_json,
    scenario_from,
    scenario_options,
)

SWEEP_HELP = {
    "model": "presets or config.json paths, comma-separated",
    "instance": "instances, comma-separated",
    "engine": "engines, comma-separated",
    "transport": "transports of the DeepEP arm, comma-separated",
    "alternative": "allgather,tp",
    "cuda_graphs": "CUDA graphs: bare, true, false or both: true,false",
    "eager": "eager decode (the measured mode): bare, true, false or both: true,false",
    "weight_dtype": "weight dtypes, comma-separated",
    "kv_dtype": "KV-cache dtypes, comma-separated",
    "calibration": "calibration profiles, comma-separated",
    "disagg": "one xPyD split, e.g. 1P3D (lists of splits: --prefill-nodes / --decode-nodes)",
    "kv_transport": "KV-cache transports, comma-separated",
    "prefill_arm": "prefill-side arms, comma-separated",
    "decode_arm": "decode-side arms, comma-separated",
    "prefill_transport": "prefill-side DeepEP transports, comma-separated",
    "decode_transport": "decode-side DeepEP transports, comma-separated",
    "prefill_cuda_graphs": "prefill-side graph modes: true, false or both",
    "decode_cuda_graphs": "decode-side graph modes: true, false or both",
}
NUMERIC_HELP = "list 1,2,4 or range a:b (step 1), a:b:+K (arithmetic), a:b:xK (geometric)"


def register(app: click.Group) -> None:
    for command in (sweep_cmd, breakeven_cmd, sensitivity_cmd, validate_cmd):
        app.add_command(command)


def sweep_field_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """evaluate's scenario flags, same names and value words, each taking a list (`ListOf`):
    the text reaches `sweep.py`, which parses lists and ranges and names a bad item."""
    for name, typ, _help, _default in reversed(SCENARIO_FLAGS):
        field = name[2:].replace("-", "_")
        extra: dict[str, Any] = {}
        if name in MODE_FLAGS or name in SIDE_MODE_FLAGS:  # bare like evaluate's: --cuda-graphs means true
            extra = {"is_flag": False, "flag_value": "true"}
        f = click.option(
            name,
            field,
            type=ListOf(typ),
            default=None,
            metavar="[LIST]" if name in MODE_FLAGS or name in SIDE_MODE_FLAGS else "LIST",
            help=SWEEP_HELP.get(field, NUMERIC_HELP),
            shell_complete=LISTS.get(field),
            **extra,
        )(f)
    return f


@click.command("sweep")
@sweep_field_options
@click.option(
    "-o", "--output", metavar="FILE", help="write every row: .csv or .parquet (- for CSV on stdout)"
)
@click.option("--map", "map_path", metavar="FILE", help="verdict map: .html (plotly) or .png (- for stdout)")
@click.option("--x", "x_axis", default="nodes", show_default=True, help="map x axis (a scenario field)")
@click.option("--y", "y_axis", default="concurrency", show_default=True, help="map y axis")
@click.option(
    "--chunk-rows",
    type=int,
    default=None,
    help="most rows per vectorised pass (a block of the grid)  [default: 50,000; 25,000 writing CSV]",
)
@click.option(
    "--precision",
    type=int,
    default=6,
    show_default=True,
    help="significant digits of CSV floats (1-17; 17 round-trips; Parquet keeps every bit)",
)
@click.option(
    "--keep-invalid",
    is_flag=True,
    help="also write the rows of combinations that cannot run (efa-gda on p5, ...) with a "
    "skipped_reason and empty metrics",
)
@click.option(
    "--bounds",
    is_flag=True,
    help="add what bounds each arm's step, its exchange and its NICs' busy share to -o",
)
@click.option(
    "--bound-map",
    "bound_map_path",
    metavar="FILE",
    help="map of what bounds an arm's step over --x / --y: .html or .png (- for stdout)",
)
@click.option(
    "--bound-arm",
    type=click.Choice(["deepep", "alternative", "replica"]),
    default="deepep",
    show_default=True,
    help="the arm the bound map shows",
)
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def sweep_cmd(
    output: str | None,
    map_path: str | None,
    x_axis: str,
    y_axis: str,
    chunk_rows: int | None,
    precision: int,
    keep_invalid: bool,
    bounds: bool,
    bound_map_path: str | None,
    bound_arm: str,
    as_json: bool,
    **fields: str | None,
) -> None:
    """Every combination of lists and ranges of scenario fields, through the vectorised model.

    Combinations that cannot run by construction (a transport an instance lacks, experts no EP
    group splits) are skipped and counted on stderr; a value no combination can use is refused.

    Example: --nodes 1,2,4,8 --concurrency 1:512:x2 --transport efa-proxy,efa-gda -o out.csv
    """
    from ...base.errors import printable
    from ...whatif.sweep.grid import plan_sweep
    from ...whatif.sweep.run import check_precision, run_sweep

    to_stdout = "-" in (output, map_path, bound_map_path)
    if to_stdout and as_json:
        raise click.UsageError("-o - / --map - write to stdout; drop --json or name a file")
    check_precision(precision)
    plan = plan_sweep({k: v for k, v in fields.items() if v is not None})
    summary = run_sweep(
        plan,
        output,
        map_path,
        x_axis,
        y_axis,
        chunk_rows=chunk_rows,
        precision=precision,
        keep_invalid=keep_invalid,
        bounds=bounds,
        bound_map_path=bound_map_path,
        bound_arm=bound_arm,
    )
    line = summary.skipped_line()
    if line:
        click.echo(f"deepep-calc: {line}", err=True)
    if as_json:
        emit_json(summary.to_json())
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False, stderr=to_stdout)  # rows on stdout: the summary beside them
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


@click.command("breakeven")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the answers as JSON")
def breakeven_cmd(as_json: bool, **kwargs: Any) -> None:
    """Where this scenario's verdict would change: each answer solved, as a sentence with units and tags."""
    from ...decide.breakeven import breakeven
    from ...report.breakeven_view import print_breakeven

    answers = breakeven(scenario_from(kwargs))
    if as_json:
        emit_json({"answers": [a.to_json() for a in answers]})
        return
    print_breakeven(answers)


def print_sensitivity(rows: list[Any]) -> None:
    """The tornado as a table, largest swing first, and the one-line judgement."""
    from rich.text import Text

    from ...decide.verdict import SYMBOLS
    from ...report import term
    from ...whatif.sensitivity import fragility

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
    from ...decide.verdict import ARM_LABELS

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


@click.command("sensitivity")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the tornado as JSON")
def sensitivity_cmd(as_json: bool, **kwargs: Any) -> None:
    """Which assumed constants move the verdict (each at ± its stated spread)."""
    from ...whatif.sensitivity import fragility, sensitivity

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
@click.option("--sources", is_flag=True, help="number every reference's source and list them at the end")
def validate_cmd(cross_validated: bool, as_json: bool, as_md: bool, sources: bool) -> None:
    """The model against every published reference, in sample and (--cv) out of sample."""
    from ...whatif.validate import render_markdown, validate

    report = validate(cross_validated=cross_validated)
    if as_json:
        emit_json(report.to_json())
        return
    if as_md:
        from ...whatif import disagg_refs

        click.echo(render_markdown(report), nl=False)
        click.echo("\n### Disaggregated deployments (never fitted)\n")
        click.echo(disagg_refs.render_markdown(report.disaggregated, report.disaggregated_cv), nl=False)
        return
    _print_report(report, sources)


def _print_disaggregated(report: Any, c: Any) -> None:
    """The disaggregated deployments: MAPE per kind of figure over the compared rows, the band
    out-of-range disaggregated figures carry, and their leave-a-group-out folds."""
    from rich.text import Text

    from ...report import term
    from ...whatif import disagg_refs

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


def _print_report(report: Any, sources: bool = False) -> None:
    """The accuracy report in tables that fit 80 columns: a summary per kind of figure, the A/B
    pairs, the largest misses and the leave-a-group-out folds; every row with --md or --json."""
    from rich.text import Text

    from ...report import term

    c = term.console()
    notes = term.Footnotes()
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
    c.print(misses)
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
