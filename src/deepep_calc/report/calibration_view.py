"""What `calibrate` prints on a terminal: the files it read and skipped, then the profile's
measured, derived and fitted numbers and its residuals, each row with its tag."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from ..base.errors import printable
from ..base.quantity import Tag
from ..calibrate.summary import PAIR_RATIOS
from ..catalog.transports import deepep_route
from . import term


def print_files(found: Any) -> None:
    """Which files the calibration read (arm, concurrency, EP_NUM_COMMS) and which it passed over."""
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
        comms = str(u.run.comms) if u.leg == "deepep" and u.run.comms is not None else ""
        conc = "" if u.run.concurrency is None else str(u.run.concurrency)
        arm = "DeepEP" if u.leg == "deepep" else "dense"
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


def _safe(value: Any) -> Any:
    """Every string of the summary with its control characters escaped (names come from files)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def _num(j: dict[str, Any] | None, digits: int = 2) -> str:
    """A summary value with its unit, or a dash where there is none."""
    return "—" if j is None or j["value"] is None else f"{j['value']:,.{digits}f} {j['unit']}"


def _tag(*js: dict[str, Any] | None) -> Text:
    """The weakest tag of the row's numbers (they share it in practice: one file, one fit)."""
    tags = [Tag.parse(j["tag"]) for j in js if j is not None]
    return term.marker(min(tags)) if tags else Text("")


def _table(title: str, *cols: str, left: int = 1) -> Table:
    """A titled table whose first `left` columns (and any tag or from column) align left, numbers right."""
    t = Table(title=title, title_justify="left")
    for n, col in enumerate(cols):
        t.add_column(col, justify="left" if n < left or col in ("tag", "from") else "right")
    return t


def print_summary(profile: Any, summary: dict[str, Any], readable: bool = True) -> None:
    """Rich tables of what was measured, derived and fitted; each row carries its tag.

    `readable`: the profile went to a regular file that `--calibration` can read back (not a
    device or a pipe).
    """
    summary = _safe(summary)
    console = Console(highlight=False, soft_wrap=False)
    _print_heading(console, profile, summary)
    _print_measured(console, summary)
    _print_derived(console, summary)
    _print_fitted(console, summary)
    _print_residuals(console, summary)
    _print_footer(console, summary, readable)


def _print_heading(console: Console, profile: Any, summary: dict[str, Any]) -> None:
    """One bold line naming the profile and the scenario it was fitted for."""
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


def _print_measured(console: Console, summary: dict[str, Any]) -> None:
    """The user's runs as read: per-user rate, ITL, TTFT and aggregate of each."""
    runs = _table("Measured: your runs", "run", "per-user", "ITL", "TTFT p50", "aggregate", "tag")
    for row in summary["measured"]:
        k = f" k{row['comms']}" if row["comms"] is not None else ""
        vals = [row[m] for m in ("per_user_tok_s", "itl_ms", "ttft_p50_ms", "aggregate_tok_s")]
        runs.add_row(
            f"{row['arm']} c{row['concurrency']}{k}",
            _num(vals[0]),
            _num(vals[1]),
            _num(vals[2], 1),
            _num(vals[3], 1),
            _tag(*vals),
        )
    console.print(runs)


def _print_derived(console: Console, summary: dict[str, Any]) -> None:
    """The pairs' tax and ratios and the EP_NUM_COMMS gains; printed only when there is a row."""
    derived = _table("Derived (DeepEP / dense unless stated)", "cell", "quantity", "value", "±", "tag")
    for p in summary["derived"]["pairs"]:
        derived.add_row(
            p["cell"], "tax per token", _num(p["tax_ms"]), _num(p["tax_spread_ms"], 3), _tag(p["tax_ms"])
        )
        for key, name in PAIR_RATIOS.items():  # a steady-state ratio only where a run waited
            if p[key] is not None or key != "steady_aggregate_ratio":
                derived.add_row(p["cell"], f"{name} ratio", _num(p[key], 3), "", _tag(p[key]))
    for m in summary["derived"]["multicomm"]:
        where = f"c{m['concurrency']} k{m['comms_high']}/k{m['comms_low']}"
        for key, name in (
            ("aggregate_ratio", "aggregate gain"),
            ("per_user_ratio", "per-user gain"),
            ("itl_ratio", "ITL shortened"),
        ):
            derived.add_row(where, f"EP_NUM_COMMS {name}", _num(m[key]), "", _tag(m[key]))
    if derived.row_count:
        console.print(derived)


def _print_fitted(console: Console, summary: dict[str, Any]) -> None:
    """The fitted constants against the built-in ones, their sources, then the kernel log's figures."""
    fitted = _table("Fitted constants (what --calibration changes)", "constant", "value", "built-in", "tag")
    rows = list(summary["fitted"].items())
    if summary["kernel"] is not None:
        k = summary["kernel"]
        rows += [(f"cost per message, dispatch ({k['transport']})", k["dispatch_beta_us"])]
        rows += [(f"cost per message, combine ({k['transport']})", k["combine_beta_us"])]
    for name, c in rows:
        fitted.add_row(name, _num(c, 3), f"{c['builtin']:,.3f}", _tag(c))
    console.print(fitted)
    for name, c in rows:
        console.print(Text(f"  {name}: {c['source'].split(': ', 1)[-1]}", style="dim"))
    if summary["kernel"] is not None:
        k = summary["kernel"]
        line = f"Kernel log, EP{k['ep']} x {k['tokens']} tokens/rank on {k['instance']}: "
        line += f"dispatch {_num(k['dispatch_p50_us'], 1)}, combine {_num(k['combine_p50_us'], 1)} "
        console.print(Text(line).append_text(_tag(k["dispatch_p50_us"], k["combine_p50_us"])))


def _print_residuals(console: Console, summary: dict[str, Any]) -> None:
    """How far the model with the fitted constants lands from each measured figure."""
    res = _table("Residuals: model with these constants - your runs", "cell", "arm", "quantity", left=3)
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


def _print_footer(console: Console, summary: dict[str, Any], readable: bool) -> None:
    """The warnings, the tag legend and where the profile went (and whether it can be read back)."""
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
