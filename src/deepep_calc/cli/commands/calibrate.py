"""`deepep-calc calibrate`: the user's AIPerf A/B exports (and a DeepEP kernel log) -> a profile.

This face reads every file (the exports, the kernel log, a config.json `--model` names, the
inputs' fingerprints) through `deepep_calc.io` and hands the calibration values; the calibration
reads and writes none. Everything is read, checked and fitted before a byte is written. The
profile is then built and validated in memory (size limit, schema, a round trip through the
reader), written once by the safe-write rules (`deepep_calc.io.safe_write`: never over an input
export, even with --force), and only then is the summary printed, rendered from the profile as
the reader parsed it: what you see is what `--calibration` will use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ...base.errors import printable
from ..options import emit_json, scenario_from, scenario_options

if TYPE_CHECKING:
    from ...calibrate.fit import KernelCalibration
    from ...calibrate.runs import RunSet
    from ...fit.profile_records import Profile
    from ...io.discover import Discovery
    from ...io.safe_write import Output

# Scenario fields the exports can supply when the user does not type them.
FROM_EXPORTS = ("model", "engine", "concurrency", "isl", "osl", "comms")


def register(app: click.Group) -> None:
    app.add_command(calibrate_cmd)


# size: a click command takes one parameter per option it declares; the work is in the helpers below it.
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

    --dense and --deepep take export files or folders: an AIPerf artifact folder, or a benchmark
    campaign of them (one per concurrency, nested as you like). The summary export of each run is read
    (its JSON over its CSV twin); every other file is listed with the reason it was skipped.
    Model, concurrency, ISL and OSL default to what the exports state; engine and
    EP_NUM_COMMS to what the file and folder names say (e.g. trtllm-..._deepep-epnc8_c32_...json,
    or runs/vllm/deepep-epnc8/c32/).
    """
    from pathlib import Path

    from ...calibrate.fit import fit_engine
    from ...calibrate.profile import build_profile, input_files, input_records, serialise
    from ...calibrate.runs import assemble, build_cells
    from ...calibrate.summary import summarise
    from ...io.discover import discover
    from ...io.hf_config import load_hf_config
    from ...io.profile import fingerprint
    from ...io.safe_write import refuse_inputs, scenario_inputs, writing

    given = [*(("--dense", d) for d in dense), *(("--deepep", d) for d in deepep)]
    if kernel_log is not None:
        given.append(("--kernel-log", kernel_log))
    given += scenario_inputs(kwargs.get("model"), kwargs.get("calibration"))
    target = _checked_target(output, given, force, as_json)
    out = Path(output)
    explicit = _typed_fields(ctx)
    base = scenario_from(kwargs)
    found = discover(list(dense), list(deepep))
    rs = assemble(found.runs("dense"), found.runs("deepep"), base, explicit, read_model=load_hf_config)
    kernel_fit = _refit_kernel(kernel_log, kernel_comms, kernel_qps, rs)
    log_path = None if kernel_log is None else Path(kernel_log)

    cells = build_cells(rs)
    calib = fit_engine(rs.scenario, cells, kernel_fit, models=rs.resolved.models)
    records = input_records(rs, log_path, {p: fingerprint(p) for p in input_files(rs, log_path)})
    profile = build_profile(rs, cells, calib, kernel_fit, records, out.name)
    data, written = serialise(profile, target.shown)
    # The exports found inside folders are known now: none of them may be the target either.
    refuse_inputs(target, [(f"--{r.role}", r.path) for r in records])
    with writing(target):
        target.stage(data)

    summary = summarise(written, output)  # the profile as the reader parsed it
    summary["files"] = found.to_json()
    _show(target, written, summary, found, as_json)


def _checked_target(output: str, given: list[tuple[str, str]], force: bool, as_json: bool) -> Output:
    """The output checked before anything is read: never an input, never over a file without
    --force, and not stdout together with --json (both would print there)."""
    from ...io.safe_write import check_output

    target = check_output(
        output, "-o", inputs=given, overwrite=force, force_hint="pass --force to overwrite it"
    )
    if target.is_stdout and as_json:
        raise click.UsageError("-o - prints the profile; drop --json or name a file")
    return target


def _typed_fields(ctx: click.Context) -> set[str]:
    """The scenario fields the user typed: the exports supply the others."""
    return {
        name
        for name in FROM_EXPORTS
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    }


def _refit_kernel(
    kernel_log: str | None, kernel_comms: int | None, kernel_qps: int | None, rs: RunSet
) -> KernelCalibration | None:
    """The transport refitted to the kernel log, at its EP_NUM_COMMS and QPs (the reference's
    unless given); None without a log, whose settings alone are refused."""
    from pathlib import Path

    from ...base.errors import InputError
    from ...calibrate.fit import fit_kernel
    from ...estimate.kernel import LIMITS
    from ...io.kernel_log import check_transport, load_kernel_log

    if kernel_log is None:
        if kernel_comms is not None or kernel_qps is not None:
            raise click.UsageError("--kernel-comms / --kernel-qps describe a --kernel-log; none was given")
        return None
    ref = rs.resolved.transport.reference
    comms = kernel_comms if kernel_comms is not None else ref.comms
    qps = kernel_qps if kernel_qps is not None else ref.qps
    for name, value in (("comms", comms), ("qps", qps)):
        if not 0 < value <= LIMITS[name]:
            raise InputError(f"--kernel-{name}", value, f"a whole number from 1 to {LIMITS[name]}")
    log = load_kernel_log(Path(kernel_log))
    check_transport(log, rs.resolved.transport)  # a log of another transport is not this one's
    return fit_kernel(log, rs.resolved.transport, rs.resolved.instance, comms, qps)


def _show(target: Output, written: Profile, summary: dict[str, Any], found: Discovery, as_json: bool) -> None:
    """The summary as JSON or tables; nothing but warnings when the profile itself went to stdout."""
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
