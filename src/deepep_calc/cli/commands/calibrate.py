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
    from ...calibrate.summary import summarise
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

    summary = summarise(written, output)  # the profile as the reader parsed it
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
        from ...report.calibration_view import print_files, print_summary

        print_files(found)
        print_summary(written, summary, readable=target.is_file)
