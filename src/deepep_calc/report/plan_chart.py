"""The plan's frontier chart and page context, shared by `plan --html` and the web Plan page.

The figure is plain plotly JSON built here: x = $ per million output tokens (log), y =
per-user tok/s. Every point's hover text names its configuration and quotes its figures with
their tags; its `customdata` is the query string of the calculator page for that
configuration, which the page's script opens on click. Nothing is computed in the browser.
"""

from __future__ import annotations

from typing import Any

from ..base import palette
from ..base.quantity import Q
from ..catalog.transports import load_transports

CLOUD_POINTS = 1500  # other compared configurations drawn behind the frontier (a sample)


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "gridcolor": "#e9ecef", "zeroline": False, **extra}


def _layout(**extra: Any) -> dict[str, Any]:
    """The look of the calculator's other charts (report/charts.py), for one more figure."""
    base: dict[str, Any] = {
        "template": None,
        "font": {
            "family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
            "size": 12,
            "color": "#212529",
        },
        "margin": {"l": 60, "r": 16, "t": 10, "b": 44},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#ffffff",
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}},
        "hoverlabel": {"align": "left"},
    }
    base.update(extra)
    return base


def _colour(arm: str, transport: str) -> str:
    t = load_transports().get(transport)
    return palette.arm_colour(arm, True if t is None else t.host_proxied)


def _fig(q: Q, digits: int) -> str:
    v = q.scalar
    return ("n/a" if v != v else f"{v:,.{digits}f}") + f" {q.unit} [{q.tag}]"


def hover(p: Any) -> str:
    """What a point says on hover: its configuration, then its figures with their tags."""
    f = p.figures
    lines = [
        f"<b>{p.label}</b>",
        f"per user {_fig(f['per_user_tok_s'], 1)}",
        f"cost {_fig(f['usd_per_mtok'], 2)} ({_fig(p.usd_per_hour, 2)})",
        f"TTFT {_fig(f['ttft_ms'], 0)}, memory {_fig(f['memory_gb_per_gpu'], 1)}/GPU",
        f"concurrency {p.config['concurrency']:,}" + ("" if p.meets_targets else ", misses a target"),
    ]
    if p.evidence == "assumed":
        lines.append("evidence assumed (outside the measured references)")
    return "<br>".join(lines)


def _trace(points: list[Any], name: str, **style: Any) -> dict[str, Any]:
    return {
        "type": "scatter",
        "name": name,
        "x": [p.figures["usd_per_mtok"].scalar for p in points],
        "y": [p.figures["per_user_tok_s"].scalar for p in points],
        "text": [hover(p) for p in points],
        "customdata": [p.card_query for p in points],
        "hovertemplate": "%{text}<extra></extra>",
        **style,
    }


def frontier_figure(plan: Any) -> dict[str, Any]:
    """The plan's cost / per-user-rate chart: its points and, if one was asked, the SLO line."""
    traces = _frontier_traces(plan)
    layout = _layout(
        xaxis=_axis("$ per million output tokens (log scale)", type="log"),
        yaxis=_axis("per-user decode tok/s", rangemode="tozero"),
        shapes=_slo_line(plan),
        height=440,
        hovermode="closest",
    )
    return {"data": traces, "layout": layout}


def _frontier_traces(plan: Any) -> list[dict[str, Any]]:
    """A sample of the configurations, the frontier, the closest misses and the best, in that
    order so the best is drawn on top."""
    cloud = plan.cloud(CLOUD_POINTS)
    traces = []
    if cloud:
        traces.append(
            _trace(
                cloud,
                "other configurations (sample)",
                mode="markers",
                marker={"color": "#ced4da", "size": 5, "opacity": 0.6},
            )
        )
    if plan.frontier:
        traces.append(
            _trace(
                plan.frontier,
                "frontier",
                mode="lines+markers",
                line={"color": "#495057", "width": 1.5, "shape": "hv"},
                marker={
                    "color": [_colour(p.arm, p.config["transport"]) for p in plan.frontier],
                    "size": 10,
                    "symbol": [  # a disaggregated (xPyD) point is a diamond
                        ("diamond" if getattr(p, "layout", "") else "circle")
                        + ("" if p.meets_targets else "-open")
                        for p in plan.frontier
                    ],
                    "line": {"color": "#212529", "width": 1},
                },
            )
        )
    if plan.nearest_misses:
        traces.append(
            _trace(
                plan.nearest_misses,
                "closest misses",
                mode="markers",
                marker={"color": "#c92a2a", "size": 11, "symbol": "x"},
            )
        )
    if plan.best is not None:
        traces.append(
            _trace(
                [plan.best],
                "cheapest meeting every target",
                mode="markers",
                marker={
                    "color": "#f59f00",
                    "size": 18,
                    "symbol": "star",
                    "line": {"color": "#212529", "width": 1},
                },
            )
        )
    return traces


def _slo_line(plan: Any) -> list[dict[str, Any]]:
    """A dashed line at the per-user SLO when the request has one."""
    shapes = []
    if plan.request.slo_tok_s is not None:
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": plan.request.slo_tok_s,
                "y1": plan.request.slo_tok_s,
                "line": {"color": "#c92a2a", "dash": "dash", "width": 1},
            }
        )
    return shapes


# The CLI's flags in the plan's sentences, as the web page's form names them (`web=True`).
WEB_WORDS: tuple[tuple[str, str], ...] = (
    (r"\(give --price-per-hour (\S+)=P\)", r"(type a price for \1 under Price per node-hour)"),
    (
        r"give a price for (\S+) \(--price-per-hour \S+=P\)",
        r"give a price for \1 (under Price per node-hour)",
    ),
    (r"\(--price-kinds all ranks them together\)", "(tick Rank every price kind together)"),
    # the whole sentence before its bracket alone, which would otherwise leave it no match
    (r"rank every price kind together \(--price-kinds all\)", "tick Rank every price kind together"),
    (r"\(--price-kinds all\)", "(Rank every price kind together)"),
    (r"drop --measured-only", "untick Measured evidence only"),
    (r"\(--measured-only\)", "(Measured evidence only)"),
    (r"--measured-only", "Measured evidence only"),
    (r"lower --slo-tok-s to", "lower the per-user floor to"),
    (r"raise --ttft-ms to", "raise the TTFT ceiling to"),
    (r"raise --budget-per-hour to", "raise the budget to"),
    (r"lower --request-rate to", "lower the request rate to"),
    (r"raise --max-nodes to", "raise Most nodes to"),
)


def web_words(text: str) -> str:
    """A plan sentence with the CLI's flags put as the page's form fields."""
    import re

    for pattern, repl in WEB_WORDS:
        text = re.sub(pattern, repl, text)
    return text


def _web_point(p: dict[str, Any] | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        **p,
        "notes": [web_words(n) for n in p["notes"]],
        "misses": [web_words(m) for m in p["misses"]],
        "change": web_words(p["change"]),
    }


def price_line(plan: Any) -> str:
    from .plan_terminal import price_line as line

    return line(plan)


def plan_context(plan: Any, web: bool = False) -> dict[str, Any]:
    """What the templates need: the plan's JSON, its figure and the lines beside them.

    `web`: for the served page, whose reader has a form, not flags: the sentences name the
    form's fields (`web_words`); `plan --html` keeps the CLI's words.
    """
    data = plan.to_json()
    if web:
        data = {
            **data,
            "note": web_words(data["note"]),
            "changes": [web_words(c) for c in data["changes"]],
            "skipped_reasons": {web_words(k): v for k, v in data["skipped_reasons"].items()},
            "best": _web_point(data["best"]),
            "frontier": [_web_point(p) for p in data["frontier"]],
            "nearest_misses": [_web_point(p) for p in data["nearest_misses"]],
        }
    return {
        "plan": data,
        "figure": frontier_figure(plan),
        "points": {
            "best": plan.best,
            "frontier": plan.frontier,
            "misses": plan.nearest_misses,
        },
        "seconds": plan.seconds,
        "price_line": (web_words if web else str)(price_line(plan)),
        "flag_lines": _flag_lines(plan.best.flags) if plan.best is not None else [],
    }


def _flag_lines(flags: dict[str, Any]) -> list[str]:
    from .view import flag_lines

    return flag_lines(flags)
