"""Error bands on the page (issue 9): at 1440 px and on a phone (390 x 844) the modelled figures
show their band, the close call's ratio band is the one the headline quotes, a legend says what
a band is, and nothing makes the document wider than the window.

Same browser setup as test_browser.py (Debian chromium through Playwright).
"""

from __future__ import annotations

import re

import pytest

from web_fixtures import live_server  # noqa: F401  (fixture)

from .test_browser import ARTIFACTS, Watch, _poll, browser  # noqa: F401

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
CLOSE_CALL = "/?transport=efa-gda"  # both arms modelled: ratio 1.00, band 0.83-1.19x


@pytest.fixture(scope="module", params=list(SIZES))
def page(request, browser, live_server):  # noqa: F811
    p = browser.new_page(viewport=SIZES[request.param])
    watch = Watch(p)
    p.goto(live_server.url + CLOSE_CALL)
    p.wait_for_selector("body[data-ready]")
    _poll(p, "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
    yield p, request.param
    watch.assert_local(live_server.url)
    p.close()


def _visible_inside(p, selector: str) -> bool:
    """The first match has a box, is not hidden, and lies within the window's width."""
    return p.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);"
        " return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'"
        " && r.left >= 0 && r.right <= innerWidth; }"
    )


def test_bands_fit_the_window(page) -> None:
    p, size = page
    o = p.evaluate("({sw: document.documentElement.scrollWidth, iw: innerWidth})")
    assert o["sw"] <= o["iw"], f"document is {o['sw']} px wide in a {o['iw']} px window"
    p.locator("#arms-table").scroll_into_view_if_needed()
    p.screenshot(path=str(ARTIFACTS / f"bands-{size}.png"), full_page=True)


def test_arms_table_shows_bands_of_modelled_figures(page) -> None:
    p, _ = page
    bands = p.locator("#arms-table .band")
    assert bands.count() >= 5
    p.locator("#arms-table").scroll_into_view_if_needed()
    text = bands.first.inner_text()
    assert re.fullmatch(r"\([\d,.]+–[\d,.]+\)", text), text
    assert _visible_inside(p, "#arms-table .band")
    assert _visible_inside(p, "#band-legend")
    assert "80 % of its out-of-sample misses" in p.locator("#band-legend").inner_text()


def test_close_call_ratio_band_matches_the_headline(page) -> None:
    p, _ = page
    headline = p.locator("#headline").inner_text()
    m = re.search(r"error band (\d\.\d\d–\d\.\d\d×)", headline)
    assert m, headline
    ratio_row = p.locator("#compare-table tr").first
    assert ratio_row.locator(".band").inner_text() == f"({m.group(1)})"
    assert _visible_inside(p, "#compare-table .band")


def test_bands_survive_a_live_update(browser, live_server) -> None:  # noqa: F811
    """The page's JavaScript redraws the tables from the API with the bands the server computed
    (details.bands): after an edit they read exactly as the server renders them."""
    p = browser.new_page(viewport=SIZES["phone"])
    watch = Watch(p)
    p.goto(live_server.url + CLOSE_CALL)
    p.wait_for_selector("body[data-ready]")
    server = [p.locator(s).inner_text() for s in ("#arms-table", "#compare-table", "#provenance-table")]
    p.goto(live_server.url + "/")
    p.wait_for_selector("body[data-ready]")
    before = int(p.evaluate("document.body.dataset.updates || '0'"))
    p.click("#form-toggle")
    p.select_option("#f-transport", "efa-gda")
    _poll(p, f"Number(document.body.dataset.updates || 0) > {before} && !document.body.dataset.busy")
    live = [p.locator(s).inner_text() for s in ("#arms-table", "#compare-table", "#provenance-table")]
    assert live == server
    assert p.locator("#compare-table .band").count() >= 2
    watch.assert_local(live_server.url)
    p.close()
