"""What the page and the HTML / Markdown reports show, decided once.

The rows of the arms table, the number formatting, the provenance table and the Jinja
environment live here so the web page (server-rendered and JavaScript-updated), the HTML
report and the Markdown summary cannot disagree. Everything works on `Result.to_json()`,
the same object the CLI prints and the API returns: a figure shown anywhere is a figure in
that object.

Why one module: it is the one place display strings are decided for the page, its
JavaScript updates and both reports, so no face formats a number its own way.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..base import palette
from ..base.arrays import first_float
from ..base.quantity import Q
from ..base.vocabulary import SYMBOLS, VERDICTS_SHOWN, flag_of
from ..catalog.transports import deepep_route, load_transports
from ..decide.launch import run_blocks
from ..decide.verdict import ARM_LABELS, TITLES
from ..physics.params import count_params
from ..question.fields import DEFAULTS
from . import disagg_view
from .labels import TAG_IN_TEXT, arm_head, step_label

# (label, path inside one arm's JSON, decimals)
ARM_ROWS: list[tuple[str, str, int]] = [
    ("Per-user decode", "per_user_tok_s", 1),
    ("Decode step", "step_ms", 2),
    ("Aggregate throughput", "aggregate_tok_s", 1),
    ("Time to first token", "ttft_ms", 0),
    ("Cost", "usd_per_mtok", 2),
    ("Memory per GPU", "memory_gb_per_gpu", 1),
    ("KV headroom per GPU", "memory_detail_gb.headroom", 1),
    ("Max concurrency that fits", "max_concurrency", 0),
    ("Running sequences", "running_sequences", 0),
]
# (label, key at the top level of the result, decimals)
COMPARE_ROWS: list[tuple[str, str, int]] = [
    ("DeepEP / alternative, aggregate", "ratio_deepep_vs_alternative", 2),
    ("DeepEP / alternative, per user", "ratio_per_user", 2),
    ("DeepEP tax per token", "tax_ms_per_token", 1),
]
_COMPARED_KEY = {  # top-level result key -> the verdict's compared figure it mirrors
    "ratio_deepep_vs_alternative": "ratio",
    "ratio_per_user": "per_user_ratio",
    "tax_ms_per_token": "tax_ms_per_token",
}
SAVING_LABEL = "DeepEP saving per token"
LONGER_LABEL = "DeepEP step longer by (first token and batch size carry the aggregate)"
TAG_MEANING = {
    "measured": "observed on hardware (a cited run or your imported benchmark)",
    "derived": "arithmetic on measured values only",
    "assumed": "rests on a spec sheet, a price, a model assumption or a value you typed: verify locally",
}
VERDICT_BLURB = {  # what each category means, on the cards that are not lit
    "dense": "When DeepEP does not beat the other arms by more than the noise band: the all-to-all "
    "is not the bottleneck, or what it saves is lost elsewhere (a host proxy, host launches).",
    "capacity": "When the model or its KV cache does not fit without sharding experts across "
    "nodes: accept the all-to-all, because the alternative is running out of memory.",
    "deepep": "When DeepEP beats every other arm by more than the noise band: a small exchange "
    "cost (GPU-initiated, or hidden by CUDA graphs), or a batch whose allgather bytes dominate.",
}
CODES = VERDICTS_SHOWN
BAND_LEGEND = (
    "(low–high): the model's error band, where 80 % of its out-of-sample misses on that kind of "
    "figure fall (wider where no reference covers the combination; docs/model.md §9); measured "
    "figures carry none."
)
BAND_LEGEND_SHORT = "(lo–hi) band: holds 80 % of out-of-sample misses, docs/model.md §9"
"""The same legend in 73 columns, for the 80-column card."""


def fmt(value: Any, digits: int) -> str:
    """The one number format (the page's JavaScript mirrors it: en-US grouping, fixed decimals)."""
    if value is None:
        return "n/a"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != v:
        return "n/a"
    return f"{v:,.{digits}f}"


def band_range(q: Any, digits: int = 1) -> str:
    """`760.3–901.7` (`0.84–1.20×` for a ratio): a figure's band, or '' when it has none.

    Why one function: the close-call headline words the ratio's band as `0.84–1.20×`
    (verdict.py); every face prints bands through this, so the band beside the ratio is the one
    the headline quotes. `q` is a `Q` or its JSON; a measured figure has no band.
    """
    if q is None:
        return ""
    low, high = (q.get("low"), q.get("high")) if isinstance(q, Mapping) else (q.low, q.high)
    if low is None or high is None:
        return ""
    unit = q["unit"] if isinstance(q, Mapping) else q.unit
    low, high = first_float(low), first_float(high)
    digits = band_digits(low, high, digits)
    text = f"{fmt(low, digits)}–{fmt(high, digits)}"
    return f"{text}×" if unit in ("x", "1", "ratio") else text


def band_digits(low: float, high: float, digits: int) -> int:
    """The decimals a band is printed with: the figure's own, but at most four significant
    digits in all. A band is a percentile of past errors, good to a few per cent: `1,131–1,291`
    says all it knows, where `1,130.9–1,291.4` claims more and no longer fits a card's column."""
    top = max(abs(low), abs(high))
    if not math.isfinite(top) or top < 1.0:
        return digits
    return max(0, min(digits, 3 - math.floor(math.log10(top))))


def unit_shown(unit: str) -> str:
    return "" if unit in ("x", "1") else unit


def dig(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[part]
    return obj


def arm_label(data: dict[str, Any], arm: str) -> str:
    """An arm's column head, from a result's JSON (`labels.arm_head`)."""
    layout = data["arms"].get(arm, {}).get("layout", "")
    return arm_head(arm, data["scenario"]["transport"], data["scenario"]["nodes"], layout)


def provenance_rows(data: dict[str, Any]) -> list[dict[str, str]]:
    """Every number of a result, flattened: where it is, value, unit, tag and source."""
    rows: list[dict[str, str]] = []

    def add(where: str, q: dict[str, Any], digits: int = 2) -> None:
        band = band_range(q, digits)
        rows.append(
            {
                "where": where,
                "value": fmt(q["value"], digits),
                "unit": unit_shown(q["unit"]),
                "tag": q["tag"],
                "source": q["source"],
                "band": f"({band})" if band else "",  # display-ready, as band_strings
            }
        )

    for arm, a in data["arms"].items():
        label = arm_label(data, arm)
        for row_label, path, digits in ARM_ROWS:
            add(f"{label}: {row_label.lower()}", dig(a, path), digits)
        for part, q in a["breakdown_ms"].items():
            add(f"{label}: step, {step_label(part)}", q, 2)
        for part, q in a["memory_detail_gb"].items():
            if part != "headroom":
                add(f"{label}: memory {part.replace('_', ' ')}", q, 1)
    for row_label, q, digits, _ in compare_rows(data):
        if q is not None:
            add(row_label, q, digits)
    return rows


def tag_segments(text: str) -> list[dict[str, str]]:
    """A sentence with `[derived]`-style tags, split so each tag can be drawn as a badge.

    The verdict's sentences are written for the terminal (tags in brackets); the page and the
    HTML report show the same tags as the arms table does. Splitting happens here, once, so the
    server-rendered page and the JavaScript draw the same segments.
    """
    out: list[dict[str, str]] = []
    pos = 0
    for m in TAG_IN_TEXT.finditer(text):
        if m.start() > pos:
            out.append({"text": text[pos : m.start()]})
        out.append({"tag": m.group(1)})
        pos = m.end()
    if pos < len(text):
        out.append({"text": text[pos:]})
    return out


def verdict_text(verdict: dict[str, Any]) -> dict[str, Any]:
    """The verdict's headline, reasons, advisories and robustness line as tag segments."""
    return {
        "headline": tag_segments(verdict["headline"]),
        "reasons": [tag_segments(line) for line in verdict["reasons"]],
        "advisories": [tag_segments(line) for line in verdict["advisories"]],
        "robustness": tag_segments(f"Verdict is {verdict['robustness']}"),
        "blurb": tag_segments(verdict.get("blurb") or ""),
    }


def deciding_other(data: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict's deciding comparison when it is not DeepEP against the alternative (the
    replicas won, or were the rival to beat), else None. Mirrored by app.js: decidingOther."""
    d = (data.get("verdict") or {}).get("deciding")
    if not d or d["arms"] == ["deepep", data["scenario"]["alternative"]]:
        return None
    return d  # type: ignore[no-any-return]


def _pair_words(arm: str) -> str:
    return "DeepEP" if arm == "deepep" else ARM_LABELS[arm]


def compare_rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None, int, str]]:
    """(label, quantity or None, decimals, note) of the comparison table, from the comparison
    that decided the verdict (DeepEP against the alternative, or against the replicas when they
    decided): no ratio between arms that cannot run, and a negative tax is a saving. The page's
    JavaScript mirrors this (app.js: compareRows)."""
    compared = (data.get("verdict") or {}).get("compared")
    decided = deciding_other(data)
    if decided is not None:
        compared = {**decided, "note": ""}
    rows: list[tuple[str, dict[str, Any] | None, int, str]] = []
    ratio = data["ratio_deepep_vs_alternative"] if compared is None else compared["ratio"]
    for label, key, digits in COMPARE_ROWS:
        q = data[key] if compared is None else compared[_COMPARED_KEY[key]]
        if q is not None and key == "tax_ms_per_token" and (q["value"] or 0) < 0:
            label, q = SAVING_LABEL, {**q, "value": -q["value"]}
        elif q is not None and key == "tax_ms_per_token" and ratio and (ratio["value"] or 0) > 1:
            label = LONGER_LABEL  # a ratio above 1 never sits beside a plain "tax"
        if decided is not None:
            a, b = (_pair_words(n) for n in decided["arms"])
            label = label.replace("DeepEP / alternative", f"{a} / {b}").replace("DeepEP ", f"{a} ", 1)
            if key == "tax_ms_per_token":
                label += f" (against {b})"
        rows.append((label, q, digits, compared["note"] if q is None and compared else ""))
    return rows


def band_strings(data: dict[str, Any]) -> dict[str, Any]:
    """Every band the arms and comparison tables show, as display strings: `(760.3–901.7)`, or
    `''` for a figure with none.

    For the renderer that draws the tables from the result's JSON (the page's JavaScript): it
    places these strings beside the numbers, as `_macros.html:num` does, and computes nothing.
    Keys follow ARM_ROWS paths and the rows of `compare_rows`.
    """

    def shown(q: Any, digits: int) -> str:
        band = band_range(q, digits)
        return f"({band})" if band else ""

    compared = compared_row(data)
    return {
        "arms": {
            arm: {path: shown(dig(a, path), digits) for _, path, digits in ARM_ROWS}
            for arm, a in data["arms"].items()
        },
        "compared": {arm: shown(q, 1) for arm, q in compared.items()} if compared else None,
        "compare": [shown(q, digits) for _, q, digits, _ in compare_rows(data)],
    }


STATUS_WORDS = {"meets": "meets", "misses": "misses", "within the band": "within the band"}


def target_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, arm field) of each target the scenario sets, for the arms table's status rows:
    meets, misses, or within the band (the figure's band spans the target). Mirrored by
    app.js: targetRows."""
    s = data["scenario"]
    out = []
    if s.get("slo_tok_s") is not None:
        out.append((f"Per-user floor (≥ {s['slo_tok_s']:g} tok/s)", "slo_status"))
    if s.get("ttft_ms") is not None:
        out.append((f"TTFT ceiling (≤ {s['ttft_ms']:g} ms)", "ttft_status"))
    return out


def compared_row(data: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Arm -> the aggregate the verdict compared, when it differs from the one shown (a measured
    figure set aside to compare like with like); None when the shown figures are the compared
    ones. Mirrored by the page's JavaScript (app.js: comparedRow)."""
    compared = (data.get("verdict") or {}).get("compared")
    if not compared:
        return None
    row = compared["aggregate_tok_s"]
    shown = {arm: a["aggregate_tok_s"]["value"] for arm, a in data["arms"].items()}
    if all(row[arm]["value"] == shown[arm] for arm in shown):
        return None
    return {arm: row[arm] for arm in shown}


def scenario_summary(data: dict[str, Any]) -> str:
    s = data["scenario"]
    graphs = "CUDA graphs" if s["cuda_graphs"] else "eager"
    route = deepep_route(s["transport"], s["nodes"])
    if s["nodes"] > 1:  # EP_NUM_COMMS sets the proxy's lanes: it means nothing on one node
        route += f" with EP_NUM_COMMS={s['comms']}"
    split = data.get("disaggregated")
    tail = f", disaggregated {split['layout']} (KV over {split['kv_transport']})" if split else ""
    return (
        f"{s['model_resolved']} ({s['weight_dtype']}) on {s['nodes']}x {s['instance']} "
        f"({s['nodes'] * s['gpus_per_node']} GPUs), {s['engine']} {graphs}, DeepEP over {route}, "
        f"concurrency {s['concurrency']}, ISL {s['isl']} / OSL {s['osl']}{tail}"
    )


def cli_command(scenario: Any) -> str:
    """The `deepep-calc evaluate` line that reproduces a scenario (only flags that differ)."""
    parts = ["deepep-calc", "evaluate"]
    for key, value in scenario.as_dict().items():
        if value is None or value == DEFAULTS.get(key):
            continue
        if key == "cuda_graphs":
            parts.append("--cuda-graphs")
            continue
        parts += [flag_of(key), shlex.quote(str(value))]
    return " ".join(parts)


def verdict_cards(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The three category cards; the lit one carries the verdict's own title (it names the arm)."""
    v = data.get("verdict")
    lit = v["code"] if v else None
    return [
        {
            "code": c,
            "symbol": SYMBOLS[c],
            "title": v["title"] if c == lit else TITLES[c],
            # the lit card says why this scenario landed there: one of the verdict's own reasons
            "blurb": (v.get("blurb") or VERDICT_BLURB[c]) if c == lit else VERDICT_BLURB[c],
            "blurb_segments": tag_segments(v.get("blurb") or VERDICT_BLURB[c]) if c == lit else None,
            "lit": c == lit,
        }
        for c in CODES
    ]


def _arm_colour(data: dict[str, Any], arm: str) -> str:

    return palette.arm_colour(arm, transport_initiation().get(data["scenario"]["transport"], True))


def page_layout() -> dict[str, Any]:
    """The table layout handed to the page's JavaScript (so both renderers use one definition)."""

    return {
        "arm_rows": ARM_ROWS,
        "compare_rows": COMPARE_ROWS,
        "tag_meaning": TAG_MEANING,
        "band_title": f"model error band: {BAND_LEGEND}",
        "compared_key": _COMPARED_KEY,
        "saving_label": SAVING_LABEL,
        "longer_label": LONGER_LABEL,
        "arm_labels": ARM_LABELS,
        "titles": TITLES,
        "blurbs": VERDICT_BLURB,
        "codes": CODES,
        "host_proxied": transport_initiation(),
        "colours": {
            "host_proxied": palette.HOST_PROXIED,
            "gpu_initiated": palette.GPU_INITIATED,
            "dense": palette.DENSE,
            "replica": palette.REPLICA,
        },
    }


def script_json(obj: Any) -> str:
    """JSON safe to place inside a <script> element (no '</script>' break-out, no NaN)."""
    text = obj if isinstance(obj, str) else json.dumps(obj, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@cache
def templates() -> Any:
    """The Jinja environment shared by the web pages and the HTML report."""
    from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=ChoiceLoader(
            [PackageLoader("deepep_calc", "web/templates"), PackageLoader("deepep_calc", "report/templates")]
        ),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["band"] = band_range
    env.filters["unit"] = unit_shown
    env.filters["script_json"] = script_json
    env.filters["flag_lines"] = flag_lines
    env.filters["tag_segments"] = tag_segments
    env.filters["run_blocks"] = run_block_parts
    env.globals.update(
        ARM_ROWS=ARM_ROWS,
        COMPARE_ROWS=COMPARE_ROWS,
        TAG_MEANING=TAG_MEANING,
        BAND_LEGEND=BAND_LEGEND,
        css_vars=palette.css_variables(),
        dig=dig,
        compare_rows=compare_rows,
        compared_row=compared_row,
        target_rows=target_rows,
        arm_label=arm_label,
        arm_colour=_arm_colour,
    )
    return env


def model_summary(result: Any) -> dict[str, Any]:
    """The structure that was evaluated, with its parameter counts tagged like its memory."""

    m = result.resolved.model
    p = count_params(m)
    tag = Q.derived if m.verified else Q.assumed
    src = f"parameter count from the structure ({m.source})"
    return {
        "name": m.name,
        "family": m.family,
        "source": m.source,
        "experts": m.experts,
        "topk": m.topk,
        "shared_experts": m.shared_experts,
        "hidden": m.hidden,
        "layers": m.layers,
        "moe_layers": m.moe_layers,
        "attention": m.attention.kind,
        "weight_dtype": m.weight_dtype,
        "expert_dtype": m.routed_dtype,
        "kv_dtype": m.kv_dtype,
        "total_params_b": tag(p.total / 1e9, "B params", src).to_json(),
        "active_params_b": tag(p.active / 1e9, "B params", src).to_json(),
    }


def flag_lines(flags: dict[str, Any]) -> list[str]:
    """The run block as plain lines: each pasteable part fenced on its own (see `run_blocks`)."""

    blocks = [*run_blocks(flags), *disagg_view.blocks(flags)]
    if not blocks:
        return ["# nothing runs as asked: apply one of the changes in the headline and evaluate again"]
    lines: list[str] = []
    for caption, lang, text in blocks:
        lines += [f"# {caption}", f"```{lang}", *text.splitlines(), "```"]
    return lines


def run_block_parts(flags: dict[str, Any]) -> list[dict[str, str]]:
    """The run block for templates: caption, language and text of each part (a disaggregated
    scenario's servers and router after the aggregated arm's)."""
    parts = [*run_blocks(flags), *disagg_view.blocks(flags)]
    return [{"caption": c, "lang": lang, "text": text} for c, lang, text in parts]


def transport_initiation() -> dict[str, bool]:
    """Transport name -> host-proxied, for colouring the DeepEP arm from a result's JSON."""

    return {name: t.host_proxied for name, t in load_transports().items()}


def plotly_js_path() -> Any:
    """plotly.js as shipped inside the installed `plotly` wheel (no CDN, works offline)."""
    from importlib import resources

    return resources.files("plotly").joinpath("package_data", "plotly.min.js")


def page_details(result: Any, uploaded: bool = False) -> dict[str, Any]:
    """Everything the page, the HTML report and the Markdown report draw beside the numbers:
    the model evaluated, the summary lines, charts, provenance rows and band strings.

    `uploaded`: the model came from a config.json posted to the page, so no CLI line names it.
    """
    from .charts import all_charts

    data = result.to_json()
    return {
        "model": model_summary(result),
        "summary": scenario_summary(data),
        "flag_lines": flag_lines(data["verdict"]["flags"]),
        "verdict_text": verdict_text(data["verdict"]),
        "cli": None if uploaded else cli_command(result.scenario),
        "charts": all_charts(result),
        "provenance": provenance_rows(data),
        "bands": band_strings(data),
        "arm_labels": {arm: arm_label(data, arm) for arm in data["arms"]},
        "disaggregated": _with_bands(disagg_view.page_rows(data)),
    }


def _with_bands(dv: dict[str, Any] | None) -> dict[str, Any] | None:
    """The disaggregated rows with each figure's band string, as the page shows it."""
    if dv is None:
        return None
    for r in dv["figures"]:
        r["band"] = band_range(r["q"], r["digits"])
    for r in dv["sides"]:
        for c in r["cells"]:
            if "q" in c:
                c["band"] = band_range(c["q"], c["digits"])
    return dv
