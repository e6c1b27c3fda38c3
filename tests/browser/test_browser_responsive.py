"""The page at 1440 px and on a phone (390 x 844): it fits, the verdict comes first, charts behave.

Same browser setup as test_browser.py (Debian chromium through Playwright; a required browser
in CI). Screenshots of both widths go to test-artifacts/.
"""

from __future__ import annotations

import io

import pytest

from web_fixtures import live_server  # noqa: F401  (fixture)

from .test_browser import ARTIFACTS, Watch, _poll, _updates, _wait_update, browser  # noqa: F401

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = {"desktop": DESKTOP, "phone": PHONE}
SCENARIOS = {
    "default": "/",
    "capacity": "/?model=kimi-k2&transport=efa-gda",  # infeasible arms: long "no: ..." cells
    "deepep": "/?model=deepseek-v3&nodes=8&transport=efa-gda&concurrency=512",
}


def open_page(browser, url: str, size: dict[str, int], charts: bool = True):  # noqa: F811
    page = browser.new_page(viewport=size)
    watch = Watch(page)
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    if charts:
        _poll(page, "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
    return page, watch


@pytest.fixture(scope="module", params=list(SIZES))
def loaded(request, browser, live_server):  # noqa: F811
    """The default page, loaded once per size, for the checks that only look."""
    page, watch = open_page(browser, live_server.url + "/", SIZES[request.param])
    yield page, request.param
    watch.assert_local(live_server.url)
    page.close()


def overflow(page) -> dict[str, float]:
    return page.evaluate("({sw: document.documentElement.scrollWidth, iw: innerWidth})")


def rect(page, selector: str) -> dict[str, float]:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height,"
        " top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right}; }"
    )


def intersects(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


def test_no_horizontal_overflow(loaded) -> None:
    page, size = loaded
    o = overflow(page)
    assert o["sw"] <= o["iw"], f"document is {o['sw']} px wide in a {o['iw']} px window"
    page.screenshot(path=str(ARTIFACTS / f"calculator-{size}.png"), full_page=True)
    page.screenshot(path=str(ARTIFACTS / f"calculator-{size}-first-screen.png"))


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_no_horizontal_overflow_in_other_verdicts_with_the_form_open(browser, live_server, size: str) -> None:  # noqa: F811
    for scenario in ("capacity", "deepep"):
        page, watch = open_page(browser, live_server.url + SCENARIOS[scenario], SIZES[size])
        if page.locator("#form-toggle").is_visible():
            page.click("#form-toggle")
        o = overflow(page)
        assert o["sw"] <= o["iw"], (scenario, o)
        watch.assert_local(live_server.url)
        page.close()


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_mechanism_page_fits(browser, live_server, size: str) -> None:  # noqa: F811
    page = browser.new_page(viewport=SIZES[size])
    page.goto(live_server.url + "/mechanism")
    page.wait_for_selector("#chart-flat .main-svg")
    o = overflow(page)
    assert o["sw"] <= o["iw"]
    page.screenshot(path=str(ARTIFACTS / f"mechanism-{size}.png"), full_page=True)
    page.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=list(SCENARIOS))
def test_phone_shows_the_verdict_in_the_first_screen(browser, live_server, scenario: str) -> None:  # noqa: F811
    page, _ = open_page(browser, live_server.url + SCENARIOS[scenario], PHONE, charts=False)
    lit = rect(page, "#verdict-cards .card.lit")
    headline = rect(page, "#headline")
    assert lit["bottom"] <= PHONE["height"], lit
    assert headline["top"] < PHONE["height"] - 60, headline  # the headline starts on screen
    assert rect(page, "#verdict-cards")["top"] < rect(page, "#scenario-form")["top"]  # verdict before form
    page.close()


def test_phone_form_folds_and_unfolds(browser, live_server) -> None:  # noqa: F811
    page, _ = open_page(browser, live_server.url + "/", PHONE, charts=False)
    toggle = page.locator("#form-toggle")
    assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    assert page.locator("#f-concurrency").is_hidden()
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert page.locator("#f-concurrency").is_visible()
    n = _updates(page)
    page.fill("#f-concurrency", "64")
    _wait_update(page, n)
    assert "concurrency 64" in page.locator("#scenario-line").inner_text()
    toggle.click()
    assert page.locator("#f-concurrency").is_hidden()
    page.close()


def test_phone_error_opens_the_form(browser, live_server) -> None:  # noqa: F811
    page, _ = open_page(
        browser, live_server.url + "/?nodes=0", PHONE, charts=False
    )  # a server-rendered error
    assert page.locator("#form-toggle").get_attribute("aria-expanded") == "true"
    assert page.locator('[data-error-for="nodes"]').is_visible()
    page.close()


def test_desktop_form_is_always_open(browser, live_server) -> None:  # noqa: F811
    page, _ = open_page(browser, live_server.url + "/", DESKTOP, charts=False)
    assert page.locator("#form-toggle").is_hidden()
    assert page.locator("#f-concurrency").is_visible()
    assert rect(page, "#verdict-cards .card.lit")["bottom"] <= DESKTOP["height"]
    page.close()


def test_phone_without_javascript_keeps_the_form_open(browser, live_server) -> None:  # noqa: F811
    context = browser.new_context(java_script_enabled=False, viewport=PHONE)
    page = context.new_page()
    page.goto(live_server.url + "/")
    assert page.locator("#f-concurrency").is_visible()
    assert page.locator("#form-toggle").is_hidden()
    o = overflow(page)
    assert o["sw"] <= o["iw"]
    context.close()


def test_charts_fit_their_boxes_and_toolbars_keep_off_legends(loaded) -> None:
    page, size = loaded
    width = SIZES[size]["width"]
    for name in ("per_user", "breakdown", "memory", "verdict_map"):
        box = f"#chart-{name}"
        chart, svg = rect(page, box), rect(page, f"{box} .main-svg")
        assert svg["w"] <= chart["w"] + 1 and chart["right"] <= width, (name, chart, svg)
        assert 300 <= svg["h"] <= 600, (name, svg)
        page.hover(f"{box} .nsewdrag")  # the toolbar shows on hover
        page.wait_for_timeout(150)
        bar = rect(page, f"{box} .modebar")
        assert bar["w"] > 0, name
        legend = rect(page, f"{box} .legend")
        assert not intersects(bar, legend), (name, bar, legend)
    page.mouse.move(0, 0)


def test_this_scenario_label_sits_above_the_lines(loaded) -> None:
    page, _ = loaded
    label = page.locator("#chart-per_user .annotation", has_text="this scenario")
    assert label.count() == 1
    box = label.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; }"
    )
    lines = page.locator("#chart-per_user .scatterlayer .js-line").evaluate_all(
        "ls => ls.map(l => l.getBoundingClientRect()).filter(r => r.height || r.width).map(r => r.top)"
    )
    assert lines and box["bottom"] <= min(lines), (box, lines)


def test_memory_chart_shows_its_parts(loaded) -> None:
    """At 9 of 130 GB the bars used to be slivers; the scale now follows the bars."""
    page, _ = loaded
    plot = rect(page, "#chart-memory .nsewdrag")
    bars = page.locator("#chart-memory .barlayer .point").evaluate_all(
        "ps => ps.map(p => p.getBoundingClientRect().height)"
    )
    tallest_stack = max(bars) if bars else 0
    weights = page.locator("#chart-memory .barlayer .trace").evaluate_all(
        "ts => ts.map(t => Array.from(t.querySelectorAll('.point'))"
        ".map(p => p.getBoundingClientRect().height))"
    )
    assert max(max(t) for t in weights if t) >= 0.15 * plot["h"], (weights, plot)  # a part you can see
    assert tallest_stack > 0
    assert "above this scale" in page.locator("#chart-memory").inner_text()


def test_uniform_verdict_map_says_so(browser, live_server) -> None:  # noqa: F811
    page, _ = open_page(browser, live_server.url + "/?model=kimi-k2", DESKTOP)
    text = page.locator("#chart-verdict_map").inner_text()
    assert "Same verdict everywhere in this range" in text
    page.close()
    page, _ = open_page(browser, live_server.url + "/", DESKTOP)
    cells = page.locator("#chart-verdict_map .heatmap-label").evaluate_all("ts => ts.map(t => t.textContent)")
    assert len(set(cells) & {"■", "◆", "▲"}) >= 2  # axes along which the verdict changes
    assert "Same verdict everywhere" not in page.locator("#chart-verdict_map").inner_text()
    page.close()


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
def test_reasons_show_the_same_badges_as_the_arms_table(browser, live_server, size: str) -> None:  # noqa: F811
    page, _ = open_page(browser, live_server.url + "/", SIZES[size], charts=False)

    def check() -> None:
        reasons = page.locator("#reasons")
        assert "[derived]" not in reasons.inner_text() and "[measured]" not in reasons.inner_text()
        assert reasons.locator(".tag").count() >= 3
        assert page.locator("#headline .tag").count() >= 1
        look = (
            "e => { const s = getComputedStyle(e); const b = getComputedStyle(e, '::before');"
            " return [s.fontSize, s.borderTopWidth, s.textTransform, s.paddingLeft, b.content]; }"
        )
        assert reasons.locator(".tag").first.evaluate(look) == page.locator(
            "#arms-table .tag"
        ).first.evaluate(look)
        for tag in ("measured", "derived", "assumed"):  # the same colour for the same tag
            mine, theirs = reasons.locator(f".tag-{tag}"), page.locator(f"#arms-table .tag-{tag}")
            if mine.count() and theirs.count():
                colour = "e => getComputedStyle(e).color"
                assert mine.first.evaluate(colour) == theirs.first.evaluate(colour)

    check()  # as the server rendered it
    if page.locator("#form-toggle").is_visible():
        page.click("#form-toggle")
    n = _updates(page)
    page.fill("#f-concurrency", "16")
    _wait_update(page, n)
    check()  # as the JavaScript redrew it
    page.close()


def test_dropdown_labels_are_not_truncated(loaded) -> None:
    page, _ = loaded
    if page.locator("#form-toggle").get_attribute("aria-expanded") == "false":
        page.click("#form-toggle")
    cut = page.evaluate(
        """() => {
          const ctx = document.createElement('canvas').getContext('2d');
          const out = [];
          for (const s of document.querySelectorAll('#scenario-form select')) {
            const cs = getComputedStyle(s);
            ctx.font = cs.font;
            const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
            for (const o of s.options) {
              const need = ctx.measureText(o.text).width;
              if (need > room) out.push([s.id, o.text, Math.round(need), Math.round(room)]);
            }
          }
          return out;
        }"""
    )
    assert cut == []


def test_full_page_capture_has_no_black_half(loaded) -> None:
    from PIL import Image

    page, size = loaded
    png = page.screenshot(full_page=True)
    image = Image.open(io.BytesIO(png)).convert("L")
    w, h = image.size
    assert h > SIZES[size]["height"]  # a page longer than one screen
    bottom = image.crop((0, h // 2, w, h))
    dark = sum(bottom.histogram()[:40]) / (bottom.width * bottom.height)
    assert dark < 0.02, f"{dark:.1%} of the bottom half is near-black"


@pytest.mark.parametrize("width", [360, 390, 640, 900, 1001, 1024, 1440])
def test_the_mechanism_diagram_reads_at_every_width(browser, live_server, width: int) -> None:  # noqa: F811
    """Issue #26: scaled to a phone the drawing's text fell to ~5 px. Whatever shows the two
    paths (the drawing, or the lists a phone gets) shows every layer in text of 11 px or more."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(live_server.url + "/mechanism")
    got = page.evaluate(
        """() => {
      const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).display !== 'none';
      const svg = document.getElementById('path-diagram'), list = document.getElementById('path-list');
      const out = {svg: shown(svg), list: shown(list), sizes: [], names: []};
      if (out.svg) {
        const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        svg.querySelectorAll('.layer-name, .layer-detail').forEach(e =>
          out.sizes.push(parseFloat(getComputedStyle(e).fontSize) * k));
        svg.querySelectorAll('.layer-name').forEach(e => out.names.push(e.textContent.trim()));
      } else if (out.list) {
        list.querySelectorAll('li strong, li .layer-detail').forEach(e =>
          out.sizes.push(parseFloat(getComputedStyle(e).fontSize)));
        list.querySelectorAll('li strong').forEach(e => out.names.push(e.textContent.trim()));
      }
      return out;
    }"""
    )
    assert got["svg"] != got["list"], got  # one of the two, never both
    assert len(got["names"]) >= 7 and got["sizes"], got  # five layers + the GPU-initiated path
    assert min(got["sizes"]) >= 10, (width, min(got["sizes"]))
    page.close()
