"""The accuracy report as Markdown: what `validate --md` prints and docs/model.md embeds.

Deterministic text from `accuracy/validate.py`'s report and `accuracy/disagg_refs.py`'s rows, so
the document regenerates byte for byte (`tests/report/test_model_doc.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..accuracy import disagg_refs
from ..accuracy.validate import Report, cross_validate


def _pct(x: float | None) -> str:
    if x is None or x != x:
        return "—"
    return "+0.0 %" if abs(x) < 5e-4 else f"{x * 100:+.1f} %"


def _abs_pct(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x * 100:.1f} %"


def _num(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 10 else f"{x:,.1f}"


def _line(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def validation_markdown(report: Report | None = None) -> str:
    """The accuracy tables, deterministic (docs/model.md embeds this text)."""
    rep = report or cross_validate()
    out = _kinds_section(rep)
    out += _bands_section(rep)
    out += _group_cv_section(rep)
    out += _ab_section(rep)
    out += _kernel_rows_section(rep)
    out += _serving_rows_section(rep)
    if rep.not_compared:
        out += ["", "### Not compared", ""]
        out += [f"- {name}: {why}" for name, why in rep.not_compared]
    return "\n".join(out) + "\n"


def _kinds_section(rep: Report) -> list[str]:
    """Accuracy by kind, the measured/unmeasured kernel split and the verdict agreement: the summary."""
    out = ["### Accuracy by kind of figure (in-scope rows)", ""]
    out += [
        _line("kind", "rows", "in-sample MAPE", "held-out rows", "held-out MAPE"),
        "|---|---:|---:|---:|---:|",
    ]
    for name, g in rep.kinds().items():
        out.append(
            _line(name, g["rows"], _abs_pct(g["mape"]), g["held_out_rows"], _abs_pct(g["held_out_mape"]))
        )
    split = rep.kernel_split() if rep.cross_validated else {}
    if split and split["unmeasured"]["rows"]:
        m, u = split["measured"], split["unmeasured"]
        out += [
            "",
            f"Held-out kernel rows whose transport kept another reference (refitted from it): {m['rows']}, "
            f"MAPE {_abs_pct(m['held_out_mape'])}; rows of a transport with no other reference "
            f"(unmeasured: its class's median stands in): {u['rows']}, MAPE {_abs_pct(u['held_out_mape'])}.",
        ]
    va = rep.verdict_agreement()
    worst = va["max_ratio_error"]
    out += [
        "",
        f"A/B pairs: the held-out verdict agrees on {va['agree']} of {va['pairs']}; the largest held-out "
        f"ratio error is {'—' if worst is None else f'{worst:.3f}'}.",
        "",
    ]
    return out


def _bands_section(rep: Report) -> list[str]:
    """The prediction bands and how many held-out figures fall inside; empty when there are none."""
    bands = rep.bands()
    if not bands:
        return []
    cover = rep.coverage()
    out = ["### Bands (80 % prediction bands of held-out model / reference) and their coverage", ""]
    out += [_line("band", "low", "high", "held-out figures inside (each against the others' band)")]
    out += ["|---|---:|---:|---:|"]
    for k, (lo, hi) in bands.items():
        c = cover.get(k)
        inside = "—" if c is None else f"{c['inside']} of {c['figures']} ({c['rate'] * 100:.0f} %)"
        out.append(_line(k, f"{lo:.3f}", f"{hi:.3f}", inside))
    out.append("")
    return out


def _group_cv_section(rep: Report) -> list[str]:
    """The leave-a-group-out folds and their notes; empty when the report has none."""
    if not rep.group_cv:
        return []
    out = ["### Leave a group out", ""]
    out += [_line("by", "left out", "rows predicted", "MAPE"), "|---|---|---:|---:|"]
    for g in rep.group_cv:
        for name, n, m in g.folds:
            out.append(_line(g.by, name, n, _abs_pct(m)))
    notes = [f"- by {g.by}: {g.note}" for g in rep.group_cv if g.note]
    out += ["", *notes, ""] if notes else [""]
    return out


def _ab_section(rep: Report) -> list[str]:
    """The A/B pairs' measured and predicted ratios and calls, then their steady-state lines."""
    out = ["### A/B pairs: ratio and verdict", ""]
    out += [
        _line(
            "pair",
            "engine",
            "basis",
            "measured",
            "in-sample",
            "held-out",
            "measured call",
            "held-out call",
            "agrees",
        ),
        "|---|---|---|---:|---:|---:|---|---|---|",
    ]
    for a in rep.ab:
        held = "—" if a.held_out_ratio is None else f"{a.held_out_ratio:.3f}"
        out.append(
            _line(
                a.pair,
                a.engine,
                a.basis,
                f"{a.measured_ratio:.3f}",
                f"{a.predicted_ratio:.3f}",
                held,
                a.measured_call,
                a.predicted_call,
                _yes(a.agree),
            )
        )
    out += [f"\n{a.steady_line()}." for a in rep.ab if a.steady_ratio is not None]
    return out


def _kernel_rows_section(rep: Report) -> list[str]:
    """Every kernel reference row, with its source and why it is out of scope if it is."""
    out = ["", "### Kernels (per MoE layer)", ""]
    out += [
        _line("reference", "metric", "measured", "model", "error", "held-out error", "fit row", "source"),
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in (r for r in rep.rows if r.kind == "kernel"):
        scope = "" if r.in_scope else f" (out of scope: {r.scope_note})"
        out.append(
            _line(
                r.reference,
                r.metric,
                _num(r.measured),
                _num(r.predicted),
                _pct(r.error),
                _pct(r.cv_error),
                _yes(r.fitted),
                r.source + scope,
            )
        )
    return out


def _serving_rows_section(rep: Report) -> list[str]:
    """Every serving reference row (not a kernel), marking the check-only ones."""
    out = ["", "### Serving references (model, not the measured substitution)", ""]
    out += [
        _line("reference", "metric", "measured", "model", "error", "held-out error", "fit row"),
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in (r for r in rep.rows if r.kind != "kernel"):
        scope = "" if r.in_scope else " (check only)"
        out.append(
            _line(
                r.reference + scope,
                r.metric,
                _num(r.measured),
                _num(r.predicted),
                _pct(r.error),
                _pct(r.cv_error),
                _yes(r.fitted),
            )
        )
    return out


def disagg_markdown(report_rows: Sequence[Any], folds: Sequence[Any] = ()) -> str:
    """The disaggregated references' table (docs/model.md embeds it)."""

    compared = [r for r in report_rows if r.in_scope]
    out = []
    for kind in ("step", "ttft", "aggregate"):
        errs = [abs(r.error) for r in compared if r.kind == kind]
        if errs:
            out.append(f"- {kind}: {len(errs)} compared rows, MAPE {np.mean(errs) * 100:.1f} %")
    found = disagg_refs.bands(report_rows)
    if found:
        out.append(
            "- band outside the references' range (10th-90th percentile of model / reference): "
            + ", ".join(f"{k} {lo:.3f}-{hi:.3f}" for k, (lo, hi) in sorted(found.items()))
        )
    for g in folds:
        out.append(
            f"- leave one {g.by.split(', ')[-1]} out: "
            + ", ".join(f"{n} {m * 100:.0f} %" for n, _, m in g.folds)
        )
    out += ["", "| reference | metric | measured | model | error |", "|---|---|---:|---:|---:|"]
    for r in report_rows:
        scope = "" if r.in_scope else " (check only)"
        out.append(_line(r.reference + scope, r.metric, _num(r.measured), _num(r.predicted), _pct(r.error)))
    return "\n".join(out) + "\n"
