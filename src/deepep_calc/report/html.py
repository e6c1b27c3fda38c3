"""`deepep-calc report --html`: one self-contained HTML file for a design review.

Inline CSS, inline plotly.js (read from the installed `plotly` wheel), inline figures: the
file opens from disk with no server and no network. It is rendered with the page's own Jinja
macros, so the report and the web page show the same numbers the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..estimate.result import Result
from . import view


def static_text(name: str) -> str:
    """A file of the web page's static folder (stylesheets, scripts), to inline into a report."""
    from importlib import resources

    return resources.files("deepep_calc.web").joinpath("static", name).read_text("utf-8")


def inline_script(text: str) -> str:
    """Script text that cannot close its own <script> element early."""
    return text.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def report_context(result: Result) -> dict[str, Any]:
    from .view import page_details

    data = result.to_json()
    details = page_details(result)
    return {
        "data": data,
        "verdict": data["verdict"],
        "cards": view.verdict_cards(data),
        "summary": details["summary"],
        "details": details,
        "cli": details["cli"],
    }


def render_html(result: Result) -> str:
    from ..base.version import __version__

    ctx = report_context(result)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        view.templates()
        .get_template("report.html")
        .render(
            **ctx,
            generated=f"deepep-calc {__version__}, {stamp}",
            css=static_text("style.css"),
            plotly_js=inline_script(view.plotly_js_path().read_text("utf-8")),
            charts_js=inline_script(static_text("charts.js")),
        )
    )
