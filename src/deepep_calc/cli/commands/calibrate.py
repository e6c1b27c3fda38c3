"""`deepep-calc calibrate`: the user's AIPerf A/B exports (and a DeepEP kernel log) -> a profile.

Everything is read, checked and fitted before a byte is written. The profile is then built
and validated in memory (size limit, schema, a round trip through the reader), written once by
the safe-write rules (`deepep_calc.files.safe_write`: never over an input export, even with --force), and
only then is the summary printed, rendered from the profile as the reader parsed it: what you
see is what `--calibration` will use.
"""

from __future__ import annotations

from typing import Any

import click

from ...base.errors import printable
from ..options import emit_json, scenario_from, scenario_options

# Scenario fields the exports can supply when the user does not type them.
FROM_EXPORTS = ("model", "engine", "concurrency", "isl", "osl", "comms")

# The A/B pair's ratios, as the summary names them.
_PAIR_RATIOS = {
    "per_user_ratio": "per-user",
    "aggregate_ratio": "aggregate",
    "steady_aggregate_ratio": "steady-state aggregate",
    "ttft_ratio": "TTFT p50",
}


def register(app: click.Group) -> None:
    app.add_command(calibrate_cmd)


@click.command("calibrate")
@click.option(
    "--dense",
    multiple=True,
    metavar="DIR_OR_FILE",
    help="AIPerf export of a dense / allgather run (repeatable)",
)
@click.option(
    "--deepep",
    multiple=True,
    required=True,
    metavar="DIR_OR_FILE",
    help="AIPerf export of a DeepEP run (repeatable: several concurrencies or EP_NUM_COMMS values)",
)
@click.option(
    "--kernel-log", metavar="FILE", help="DeepEP kernel log: refits the transport's per-selection cost"
)
@click.option(
    "--kernel-comms", type=int, help="EP_NUM_COMMS the kernel log ran with [default: the reference's]"
)
@click.option("--kernel-qps", type=int, help="QPs the kernel log ran with [default: the reference's]")
@scenario_options
@click.option("-o", "--output", required=True, metavar="FILE", help="profile to write (TOML)")
@click.option("--force", is_flag=True, help="overwrite an existing profile")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.pass_context
def calibrate_cmd(
    ctx: click.Context,
    dense: tuple[str, ...],
    deepep: tuple[str, ...],
    kernel_log: str | None,
    kernel_comms: int | None,
    kernel_qps: int | None,
    output: str,
    force: bool,
    as_json: bool,
    **kwargs: Any,
) -> None:
    """Fit a calibration profile to your own AIPerf runs (use it with --calibration FILE).

    --dense and --deepep take export files or folders: an AIPerf artifact folder, or a sweep
    of them (one per concurrency, nested as you like). The summary export of each run is read
    (its JSON over its CSV twin); every other file is listed with the reason it was skipped.
    Model, concurrency, ISL and OSL default to what the exports state; engine and
    EP_NUM_COMMS to what the file and folder names say (e.g. trtllm-..._deepep-epnc8_c32_...json,
    or runs/vllm/deepep-epnc8/c32/).
    """
    from pathlib import Path

    from ...base.errors import InputError
    from ...calibrate.fit import fit_engine, fit_kernel
    from ...calibrate.profile import build_profile, input_records, serialise
    from ...calibrate.runs import assemble, build_cells
    from ...estimate.kernel import LIMITS
    from ...files.discover import discover
    from ...files.kernel_log import check_transport, load_kernel_log
    from ...files.safe_write import check_output, refuse_inputs, scenario_inputs, writing

    given = [*(("--dense", d) for d in dense), *(("--deepep", d) for d in deepep)]
    if kernel_log is not None:
        given.append(("--kernel-log", kernel_log))
    given += scenario_inputs(kwargs.get("model"), kwargs.get("calibration"))
    target = check_output(
        output, "-o", inputs=given, overwrite=force, force_hint="pass --force to overwrite it"
    )
    if target.is_stdout and as_json:
        raise click.UsageError("-o - prints the profile; drop --json or name a file")
    out = Path(output)
    explicit = {
        name
        for name in FROM_EXPORTS
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    }
    base = scenario_from(kwargs)
    found = discover(list(dense), list(deepep))
    rs = assemble(found.runs("dense"), found.runs("deepep"), base, explicit)

    kernel_fit = None
    log_path = None
    if kernel_log is not None:
        log_path = Path(kernel_log)
        ref = rs.resolved.transport.reference
        comms = kernel_comms if kernel_comms is not None else ref.comms
        qps = kernel_qps if kernel_qps is not None else ref.qps
        for name, value in (("comms", comms), ("qps", qps)):
            if not 0 < value <= LIMITS[name]:
                raise InputError(f"--kernel-{name}", value, f"a whole number from 1 to {LIMITS[name]}")
        log = load_kernel_log(log_path)
        check_transport(log, rs.resolved.transport)  # a log of another transport is not this one's
        kernel_fit = fit_kernel(log, rs.resolved.transport, rs.resolved.instance, comms, qps)
    elif kernel_comms is not None or kernel_qps is not None:
        raise click.UsageError("--kernel-comms / --kernel-qps describe a --kernel-log; none was given")

    cells = build_cells(rs)
    calib = fit_engine(rs.scenario, cells, kernel_fit)
    records = input_records(rs, log_path)
    profile = build_profile(rs, cells, calib, kernel_fit, records, out.name)
    data, written = serialise(profile, target.shown)
    # The exports found inside folders are known now: none of them may be the target either.
    refuse_inputs(target, [(f"--{r.role}", r.path) for r in records])
    with writing(target):
        target.stage(data)

    summary = summarise(written, output)
    summary["files"] = found.to_json()
    if target.is_stdout:  # the profile is the output: the summary would corrupt it
        for w in written.warnings:
            click.echo(f"deepep-calc: warning: {printable(w)}", err=True)
        return
    if as_json:
        for w in written.warnings:
            click.echo(f"deepep-calc: warning: {printable(w)}", err=True)
        emit_json(summary)
    else:
        print_files(found)
        print_summary(written, summary, readable=target.is_file)


# Summary ---------------------------------------------------------------------------------------


def print_files(found: Any) -> None:
    """Which files the calibration read (arm, concurrency, EP_NUM_COMMS) and which it passed over."""
    from rich.console import Console
    from rich.table import Column, Table
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=False)
    table = Table(
        Column("file", overflow="fold", ratio=1),
        Column("arm", no_wrap=True),
        Column("conc", justify="right", no_wrap=True),
        Column("comms", justify="right", no_wrap=True),
        Column("format", no_wrap=True),
        title=f"Runs read ({len(found.used)})",
        title_justify="left",
    )
    for u in found.used:
        comms = str(u.run.comms) if u.arm == "deepep" and u.run.comms is not None else ""
        conc = "" if u.run.concurrency is None else str(u.run.concurrency)
        arm = "DeepEP" if u.arm == "deepep" else "dense"
        table.add_row(str(u.path), arm, conc, comms, u.run.export_format)
    console.print(table)
    for u in found.used:
        if u.note:
            console.print(Text(f"  note: {u.note}", style="dim"))
    if found.skipped:
        skipped = Table(
            Column("file", overflow="fold", ratio=1),
            Column("why it was not read", overflow="fold", ratio=1),
            title=f"Skipped ({len(found.skipped)})",
            title_justify="left",
            style="dim",
        )
        for s in found.skipped:
            skipped.add_row(str(s.path), s.reason)
        console.print(skipped)


def summarise(profile: Any, path: str) -> dict[str, Any]:
    """Everything the table shows, as JSON: each number with its unit, tag and source."""
    from ...fit.profile_records import CONSTANTS

    label = profile.label
    measured = []
    seen_dense: set[int] = set()
    for cell in profile.cells():
        for arm in ("deepep", "allgather"):
            if cell.arm(arm) is None or (arm == "allgather" and cell.concurrency in seen_dense):
                continue
            if arm == "allgather":
                seen_dense.add(cell.concurrency)
            row: dict[str, Any] = {
                "cell": cell.id,
                "arm": "DeepEP" if arm == "deepep" else "dense",
                "concurrency": cell.concurrency,
                "comms": cell.comms if arm == "deepep" else None,
            }
            for metric, unit in (
                ("per_user_tok_s", "tok/s"),
                ("itl_ms", "ms"),
                ("ttft_p50_ms", "ms"),
                ("aggregate_tok_s", "tok/s"),
            ):
                q = cell.q(arm, metric, unit)
                row[metric] = q.to_json() if q is not None else None
            measured.append(row)

    def rec(r: Any) -> Any:
        return r.q(label).to_json() if r is not None else None

    pairs = [
        {
            "cell": p.cell,
            **{k: rec(getattr(p, k)) for k in ("tax_ms", "tax_spread_ms", *_PAIR_RATIOS)},
        }
        for p in profile.pairs
    ]
    multicomm = [
        {
            "concurrency": m.concurrency,
            "comms_low": m.comms_low,
            "comms_high": m.comms_high,
            **{k: rec(getattr(m, k)) for k in ("aggregate_ratio", "per_user_ratio", "itl_ratio")},
        }
        for m in profile.multicomm
    ]

    def fitted(c: Any) -> dict[str, Any]:
        return {**c.q(label).to_json(), "builtin": c.builtin}

    kernel = None
    for k in profile.kernel:
        kernel = {
            "transport": k.transport,
            "instance": k.instance,
            "ep": k.ep,
            "tokens": k.tokens,
            "comms": k.comms,
            "qps": k.qps,
            "dispatch_p50_us": rec(k.dispatch_p50_us),
            "combine_p50_us": rec(k.combine_p50_us),
            "total_p50_us": rec(k.total_p50_us),
            "dispatch_beta_us": fitted(k.dispatch_beta_us),
            "combine_beta_us": fitted(k.combine_beta_us),
        }
    return {
        "profile": path,
        "scenario": profile.scenario.as_dict(exclude_none=True),
        "inputs": [i.model_dump(exclude_none=True) for i in profile.inputs],
        "measured": measured,
        "derived": {"pairs": pairs, "multicomm": multicomm},
        "fitted": {name: fitted(profile.constants.get(name)) for name in CONSTANTS},
        "kernel": kernel,
        "residuals": [r.model_dump() for r in profile.residuals],
        "warnings": list(profile.warnings),
    }


def _safe(value: Any) -> Any:
    """Every string of the summary with its control characters escaped (names come from files)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def print_summary(profile: Any, summary: dict[str, Any], readable: bool = True) -> None:
    """Rich tables of what was measured, derived and fitted; each row carries its tag.

    `readable`: the profile went to a regular file that `--calibration` can read back (not a
    device or a pipe).
    """
    summary = _safe(summary)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ...base.quantity import Tag
    from ...catalog.transports import deepep_route
    from ...report import term

    console = Console(highlight=False, soft_wrap=False)

    def num(j: dict[str, Any] | None, digits: int = 2) -> str:
        return "—" if j is None or j["value"] is None else f"{j['value']:,.{digits}f} {j['unit']}"

    def tag(*js: dict[str, Any] | None) -> Text:
        """The weakest tag of the row's numbers (they share it in practice: one file, one fit)."""
        tags = [Tag.parse(j["tag"]) for j in js if j is not None]
        return term.marker(min(tags)) if tags else Text("")

    def table(title: str, *cols: str, left: int = 1) -> Table:
        t = Table(title=title, title_justify="left")
        for n, col in enumerate(cols):
            t.add_column(col, justify="left" if n < left or col in ("tag", "from") else "right")
        return t

    s = profile.scenario
    console.print(
        Text(
            printable(
                f"Calibration profile {summary['profile']}: {s.model} on {s.nodes}x {s.instance}, "
                f"{s.engine} {'CUDA graphs' if s.cuda_graphs else 'eager'}, "
                f"DeepEP over {deepep_route(s.transport, s.nodes)}, "
                f"ISL {s.isl} / OSL {s.osl}"
            ),
            style="bold",
        )
    )
    runs = table("Measured: your runs", "run", "per-user", "ITL", "TTFT p50", "aggregate", "tag")
    for row in summary["measured"]:
        k = f" k{row['comms']}" if row["comms"] is not None else ""
        vals = [row[m] for m in ("per_user_tok_s", "itl_ms", "ttft_p50_ms", "aggregate_tok_s")]
        runs.add_row(
            f"{row['arm']} c{row['concurrency']}{k}",
            num(vals[0]),
            num(vals[1]),
            num(vals[2], 1),
            num(vals[3], 1),
            tag(*vals),
        )
    console.print(runs)

    derived = table("Derived (DeepEP / dense unless stated)", "cell", "quantity", "value", "±", "tag")
    for p in summary["derived"]["pairs"]:
        derived.add_row(
            p["cell"], "tax per token", num(p["tax_ms"]), num(p["tax_spread_ms"], 3), tag(p["tax_ms"])
        )
        for key, name in _PAIR_RATIOS.items():  # a steady-state ratio only where a run waited
            if p[key] is not None or key != "steady_aggregate_ratio":
                derived.add_row(p["cell"], f"{name} ratio", num(p[key], 3), "", tag(p[key]))
    for m in summary["derived"]["multicomm"]:
        where = f"c{m['concurrency']} k{m['comms_high']}/k{m['comms_low']}"
        for key, name in (
            ("aggregate_ratio", "aggregate gain"),
            ("per_user_ratio", "per-user gain"),
            ("itl_ratio", "ITL shortened"),
        ):
            derived.add_row(where, f"EP_NUM_COMMS {name}", num(m[key]), "", tag(m[key]))
    if derived.row_count:
        console.print(derived)

    fitted = table("Fitted constants (what --calibration changes)", "constant", "value", "built-in", "tag")
    rows = list(summary["fitted"].items())
    if summary["kernel"] is not None:
        k = summary["kernel"]
        rows += [(f"cost per message, dispatch ({k['transport']})", k["dispatch_beta_us"])]
        rows += [(f"cost per message, combine ({k['transport']})", k["combine_beta_us"])]
    for name, c in rows:
        fitted.add_row(name, num(c, 3), f"{c['builtin']:,.3f}", tag(c))
    console.print(fitted)
    for name, c in rows:
        console.print(Text(f"  {name}: {c['source'].split(': ', 1)[-1]}", style="dim"))
    if summary["kernel"] is not None:
        k = summary["kernel"]
        line = f"Kernel log, EP{k['ep']} x {k['tokens']} tokens/rank on {k['instance']}: "
        line += f"dispatch {num(k['dispatch_p50_us'], 1)}, combine {num(k['combine_p50_us'], 1)} "
        console.print(Text(line).append_text(tag(k["dispatch_p50_us"], k["combine_p50_us"])))

    res = table("Residuals: model with these constants - your runs", "cell", "arm", "quantity", left=3)
    for col in ("measured", "model", "residual"):
        res.add_column(col, justify="right")
    for r in summary["residuals"]:
        res.add_row(
            r["cell"],
            r["arm"],
            r["quantity"],
            f"{r['measured']:,.2f}",
            f"{r['model']:,.2f}",
            f"{r['residual']:+,.3f}",
        )
    console.print(res)
    if summary["warnings"]:
        console.print(Text("Warnings", style="bold yellow"))
        for w in summary["warnings"]:
            console.print(Text(f"  • {w}"))
    console.print(term.legend())
    console.print(Text("sources (file and benchmark id of each value): the profile, or --json", style="dim"))
    if readable:
        console.print(Text(f"Wrote {summary['profile']}; use it with --calibration {summary['profile']}"))
    else:
        console.print(Text(f"Wrote the profile to {summary['profile']} (not a file --calibration can read)"))
