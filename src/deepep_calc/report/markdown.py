"""`deepep-calc report --md`: the verdict, the arms and the provenance as Markdown.

For pasting into an issue or a design document. Every number carries its tag in brackets,
as on the terminal card, a modelled one its error band in parentheses, and the provenance table
gives each one's source.
"""

from __future__ import annotations

from typing import Any

from ..decide.launch import run_blocks
from ..estimate.result import Result
from . import disagg_view, view


def _cell(text: Any) -> str:
    """Table-cell text: pipes escaped, no line breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    """Text closed with one full stop: texts that already end in punctuation keep theirs."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def _q(q: dict[str, Any], digits: int) -> str:
    """`869.2 tok/s [assumed] (760.3–901.7)`: value, unit, tag and, when modelled, its band."""
    unit = view.unit_shown(q["unit"])
    band = view.band_range(q, digits)
    return f"{view.fmt(q['value'], digits)}{' ' + unit if unit else ''} [{q['tag']}]" + (
        f" ({band})" if band else ""
    )


def render_markdown(result: Result) -> str:
    """The whole report: verdict, arms, disaggregated split, launch commands, model, provenance."""
    from .view import page_details

    data = result.to_json()
    details = page_details(result)
    out = _verdict_section(data, details)
    out += _arms_section(data)
    dv = details.get("disaggregated")
    if dv:
        out += _disagg_section(dv)
    out += _run_section(data["verdict"]["flags"])
    out += _model_section(details["model"])
    out += _provenance_section(details["provenance"])
    return "\n".join(out) + "\n"


def _verdict_section(data: dict[str, Any], details: dict[str, Any]) -> list[str]:
    """The title, the verdict and scenario, how to reproduce it, and why, with its advisories."""
    v = data["verdict"]
    out = [
        "# deepep-calc report",
        "",
        f"**{v['symbol']} {v['title']}**: {v['headline']}",
        "",
        _sentence(f"Scenario: {details['summary']}"),
        "",
        *[line for note in data["notes"] for line in (_sentence(note), "")],
    ]
    if details["cli"]:
        out += ["Reproduce:", "", "```", details["cli"], "```", ""]
    out += ["## Why", "", *[f"- {line}" for line in v["reasons"]], ""]
    out += ["## Advisories", "", *([f"- {line}" for line in v["advisories"]] or ["- none"]), ""]
    out += [_sentence(f"Verdict is {v['robustness']}"), ""]
    if v.get("disaggregation"):
        out += [v["disaggregation"]["line"], ""]
    return out


def _arms_section(data: dict[str, Any]) -> list[str]:
    """The arms side by side (the recommended one starred), then the comparison between them."""
    v = data["verdict"]
    arms = list(data["arms"])
    head = [view.arm_label(data, a) + (" ★" if a == v["recommended_arm"] else "") for a in arms]
    out = ["## The arms", "", "| | " + " | ".join(head) + " |", "|---|" + "---:|" * len(arms)]
    for label, path, digits in view.ARM_ROWS:
        cells = [_q(view.dig(data["arms"][a], path), digits) for a in arms]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, key in view.target_rows(data):
        out.append(f"| {label} | " + " | ".join(data["arms"][a][key] or "n/a" for a in arms) + " |")
    compared = view.compared_row(data)
    if compared:
        cells = [_q(compared[a], 1) for a in arms]
        out.append("| Compared aggregate (like with like) | " + " | ".join(cells) + " |")
    feas = ["yes" if data["arms"][a]["feasible"] else f"no: {data['arms'][a]['why_not']}" for a in arms]
    out.append("| Feasible | " + " | ".join(_cell(f) for f in feas) + " |")
    out.append("")
    out += ["| Comparison | |", "|---|---:|"]
    out += [
        f"| {label} | {_q(q, digits) if q else 'n/a: ' + _cell(note)} |"
        for label, q, digits, note in view.compare_rows(data)
    ]
    out += ["", view.BAND_LEGEND, ""]
    return out


def _disagg_section(dv: dict[str, Any]) -> list[str]:
    """The disaggregated split: its figures, each side's, and where one request's time goes."""
    out = [f"## Disaggregated prefill / decode: {dv['title']}", ""]
    if not dv["feasible"]:
        out += [_sentence(f"The split cannot run: {dv['why_not']}"), ""]
    out += ["| figure | |", "|---|---:|"]
    out += [f"| {r['label']} | {_q(r['q'], r['digits'])} |" for r in dv["figures"]]
    out += ["", "| | prefill side | decode side |", "|---|---:|---:|"]
    for r in dv["sides"]:
        cells = [_q(c["q"], c["digits"]) if "q" in c else _cell(c["text"]) for c in r["cells"]]
        out.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    out += ["", "Where one request's time goes:", ""]
    out += [
        f"- {t['label']}: {view.fmt(t['ms'], 0)} ms ({t['share'] * 100:.1f} %) [{t['tag']}]"
        for t in dv["time"]
    ]
    out += ["", _sentence(f"{dv['balance']}. {dv['coverage']}"), ""]
    return out


def _run_section(flags: dict[str, Any]) -> list[str]:
    """The launch commands of the recommended arm, or a line saying nothing runs as asked."""
    out = [f"## Run it ({flags['engine']}, {flags['arm'] or 'nothing fits as asked'})", ""]
    blocks = [*run_blocks(flags), *disagg_view.blocks(flags)]
    if not blocks:
        out += ["Nothing runs as asked: apply one of the changes in the headline and evaluate again.", ""]
    for caption, lang, text in blocks:
        out += [f"{caption[0].upper()}{caption[1:]}:", "", f"```{lang}", text, "```", ""]
    return out


def _model_section(m: dict[str, Any]) -> list[str]:
    """One paragraph on the model evaluated: its shape, dtypes, parameter counts and source."""
    return [
        "## Model evaluated",
        "",
        f"{m['name']} ({m['family']}): {m['experts']} experts, top-{m['topk']}, hidden {m['hidden']}, "
        f"{m['moe_layers']} of {m['layers']} layers MoE, {m['attention'].upper()} attention, weights "
        f"{m['weight_dtype']}, KV {m['kv_dtype']}; {_q(m['total_params_b'], 1)} total, "
        f"{_q(m['active_params_b'], 1)} active. " + _sentence(f"Source: {m['source']}"),
        "",
    ]


def _provenance_section(rows: list[dict[str, Any]]) -> list[str]:
    """Every number's value, tag and source, then what each tag means."""
    out = ["## Provenance", "", "| number | value | tag | source |", "|---|---:|---|---|"]
    for r in rows:
        value = f"{r['value']} {r['unit']}".strip() + (f" {r['band']}" if r["band"] else "")
        out.append(f"| {_cell(r['where'])} | {_cell(value)} | {r['tag']} | {_cell(r['source'])} |")
    tags = "; ".join(f"**{t}**: {meaning}" for t, meaning in view.TAG_MEANING.items())
    out += ["", _sentence(f"Tags: {tags}")]
    return out
