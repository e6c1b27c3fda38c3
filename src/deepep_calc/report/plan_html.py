"""`deepep-calc plan --html`: one self-contained page with the interactive frontier.

Inline CSS, plotly.js from the installed wheel and the page's small script, like the
`report --html` file: it opens from disk with no network. Clicking a point opens that
configuration's card in a running `deepep-calc serve` (the address is editable on the page).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from . import view
from .html import inline_script, static_text
from .plan_chart import plan_context

SERVE_URL = "http://127.0.0.1:8000"  # where `deepep-calc serve` listens by default


def render_plan_html(plan: Any, serve_url: str = SERVE_URL) -> str:
    """The whole page as one string (written by the command's single write call)."""
    from ..base.version import __version__

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    ctx = plan_context(plan)
    return (
        view.templates()
        .get_template("plan_report.html")
        .render(
            result=ctx,
            plan=ctx["plan"],
            generated=f"deepep-calc {__version__}, {stamp}",
            card_base=serve_url,
            css=static_text("style.css") + "\n" + static_text("plan.css"),
            plotly_js=inline_script(view.plotly_js_path().read_text("utf-8")),
            plan_js=inline_script(static_text("plan.js")),
        )
    )
