"""`report/plan_html.py`: `deepep-calc plan --html`, one self-contained page with the frontier:
inline CSS and scripts (nothing fetched), each point linking to its card in a running
`deepep-calc serve` at an address the page names.

The plan is `plans.py`'s small search.
"""

from __future__ import annotations

import re
from functools import cache

from deepep_calc.base.version import __version__
from deepep_calc.report import plan_html
from deepep_calc.report.plan_chart import frontier_figure

from . import plans


@cache
def _page(serve_url: str = plan_html.SERVE_URL) -> str:
    return plan_html.render_plan_html(plans.answered(), serve_url)


def test_the_page_fetches_nothing_and_links_only_to_the_cards() -> None:
    """Outside the inlined scripts (whose text a browser does not follow), the only addresses
    are the points' cards on the serve address."""
    page = _page()
    assert not re.search(r"<script[^>]*\ssrc=", page) and "<link" not in page and "@import" not in page
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)
    remote = re.findall(r"(?:src|href)=\"((?:https?:)?//[^\"]*)\"", markup)
    assert remote and all(url.startswith(plan_html.SERVE_URL + "/?") for url in remote)
    assert page.count("<script") == page.count("</script>")  # no inlined script closed early


def test_the_page_links_points_to_the_serve_address_it_was_given() -> None:
    assert plan_html.SERVE_URL == "http://127.0.0.1:8000"
    assert plan_html.SERVE_URL in _page()
    other = _page("http://10.0.0.7:9000")
    assert "http://10.0.0.7:9000" in other and plan_html.SERVE_URL not in other


def test_the_page_holds_the_figure_the_best_point_and_its_stamp() -> None:
    page = _page()
    plan = plans.answered()
    assert plan.best.label in page
    for point in plan.frontier:  # each point's card, for the click
        assert f'href="{plan_html.SERVE_URL}/?{point.card_query.replace("&", "&amp;")}"' in page
    assert re.search(rf"deepep-calc {re.escape(__version__)}, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", page)
    assert len(frontier_figure(plan)["data"]) >= 2


def test_the_static_files_it_inlines_ship_with_the_package() -> None:
    """The plan page inlines the page's stylesheet, its own and its script (`html.static_text`)."""
    from deepep_calc.report.html import static_text

    for name in ("style.css", "plan.css", "plan.js"):
        assert static_text(name).strip()
