"""`deepep-calc sweep | breakeven | sensitivity`: what-if at scale (the accuracy report,
`validate`, is `commands/validate.py`).

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
    for command in (sweep_cmd, breakeven_cmd, sensitivity_cmd):
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


# size: a click command takes one parameter per option it declares; the sweep itself is run_sweep's.
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
    from functools import partial

    from ...io import safe_write, sweep_table
    from ...io.hf_config import load_hf_config
    from ...io.profile import load_profile
    from ...question.scenario import resolve
    from ...report.sweep_maps import draw
    from ...whatif.sweep.grid import sweep_grid
    from ...whatif.sweep.run import check_precision, run_sweep
    from ..progress import Bar

    to_stdout = "-" in (output, map_path, bound_map_path)
    if to_stdout and as_json:
        raise click.UsageError("-o - / --map - write to stdout; drop --json or name a file")
    check_precision(precision)
    # how the grid's files are read, handed in: a config.json as its combination is resolved, a
    # profile as its rows are first computed (after the targets are checked, as it always was)
    grid = sweep_grid(
        {k: v for k, v in fields.items() if v is not None},
        resolve=partial(resolve, read_model=load_hf_config),
        read_profile=load_profile,
    )
    with Bar("sweep", delay=1.0, eta=True) as bar:
        summary = run_sweep(
            grid,
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
            draw=draw,
            progress=bar.update,
            files=safe_write,
            tables=sweep_table,
        )
    line = summary.skipped_line()
    if line:
        click.echo(f"deepep-calc: {line}", err=True)
    if as_json:
        emit_json(summary.to_json())
        return
    from ...report.sweep_view import print_sweep_summary

    print_sweep_summary(summary, to_stderr=to_stdout)  # rows on stdout: the summary beside them


@click.command("breakeven")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the answers as JSON")
def breakeven_cmd(as_json: bool, **kwargs: Any) -> None:
    """Where this scenario's verdict would change: each answer solved, as a sentence with units and tags."""
    from ...io.inputs import resolve_files
    from ...report.breakeven_view import print_breakeven
    from ...whatif.breakeven import breakeven

    answers = breakeven(scenario_from(kwargs), resolve=resolve_files)
    if as_json:
        emit_json({"answers": [a.to_json() for a in answers]})
        return
    print_breakeven(answers)


@click.command("sensitivity")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the tornado as JSON")
def sensitivity_cmd(as_json: bool, **kwargs: Any) -> None:
    """Which assumed constants move the verdict (each at ± its stated spread)."""
    from ...io.inputs import resolve_files
    from ...whatif.sensitivity import fragility, sensitivity

    rows = sensitivity(scenario_from(kwargs), resolve=resolve_files)
    if as_json:
        emit_json({"robustness": fragility(rows), "rows": [r.to_json() for r in rows]})
        return
    from ...report.sweep_view import print_sensitivity

    print_sensitivity(rows)
