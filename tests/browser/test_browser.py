"""The page in a real browser: Debian's chromium driven by Playwright.

Skipped when /usr/bin/chromium is absent, unless DEEPEP_REQUIRE_BROWSER=1 (CI), which turns
the skip into a failure. Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from paths import REPO, TESTS
from web_fixtures import live_server  # noqa: F401  (fixture)

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIOLET = "rgb(111, 66, 193)"  # base/palette.py GPU_INITIATED
ORANGE = "rgb(217, 72, 15)"  # base/palette.py HOST_PROXIED


def _unavailable(reason: str) -> None:
    if os.environ.get("DEEPEP_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


class Watch:
    """Console errors, page errors and every request a page makes."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def assert_local(self, base: str, expected_statuses: tuple[int, ...] = ()) -> None:
        """No console error (bar the browser's own note on a refusal we provoked), no request
        to anything but the test server."""
        noted = tuple(f"responded with a status of {s} " for s in expected_statuses)
        assert [e for e in self.errors if not (noted and any(n in e for n in noted))] == []
        outside = [u for u in self.requests if not (u.startswith(base + "/") or u.startswith("data:"))]
        assert outside == []


def offline_page(browser, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    """A page that may load file:// URLs only (any other request is aborted), and the list of
    every URL it asked for: a saved report or plan page must work with no network."""
    context = browser.new_context(viewport=viewport)
    seen: list[str] = []

    def only_files(route) -> None:
        seen.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", only_files)
    return context.new_page(), seen


def _updates(page) -> int:
    return int(page.evaluate("document.body.dataset.updates || '0'"))


def _poll(page, expression: str, timeout_ms: int = 20000) -> None:
    """Wait for a JS expression to hold. `page.wait_for_function` polls with eval inside the
    page, which the server's Content-Security-Policy (rightly) forbids; `evaluate` does not."""
    waited = 0
    while not page.evaluate(expression):
        if waited > timeout_ms:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)
        waited += 50


def _wait_update(page, before: int) -> None:
    _poll(page, f"Number(document.body.dataset.updates || 0) > {before} && !document.body.dataset.busy")


def _lit(page) -> str:
    return page.locator("#verdict-cards .card.lit").get_attribute("data-code")


def _deepep_per_user(page) -> str:
    return page.locator("#arms-table tbody tr").first.locator("td").first.inner_text()


def test_calculator_updates_live(browser, live_server):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-ready]")
    _poll(page, "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
    assert _lit(page) == "dense"
    first = _deepep_per_user(page)
    assert first.startswith("19.6 tok/s") and "MEASURED" in first.upper()

    badges = page.locator("#arms-table .tag")
    assert badges.count() >= 27  # 9 rows x 3 arms
    title = badges.first.get_attribute("title")
    assert title.startswith("measured: ") and len(title) > 20  # the source, on hover
    assert page.locator("#arms-table th.arm-head").first.evaluate("e => getComputedStyle(e).color") == ORANGE
    page.screenshot(path=str(ARTIFACTS / "calculator-default.png"), full_page=True)

    n = _updates(page)
    page.select_option("#f-model", "kimi-k2")
    _wait_update(page, n)
    assert _lit(page) == "capacity"
    second = _deepep_per_user(page)
    assert second != first

    n = _updates(page)
    page.select_option("#f-transport", "efa-gda")
    _wait_update(page, n)
    assert _lit(page) == "capacity"
    head = page.locator("#arms-table th.arm-head").first
    assert "efa-gda" in head.inner_text()
    assert head.evaluate("e => getComputedStyle(e).color") == VIOLET  # GPU-initiated colour
    assert _deepep_per_user(page) != second
    assert "transport=efa-gda" in page.url and "model=kimi-k2" in page.url

    # GLM-4.5 (bf16) at concurrency 1,024 over GPU-initiated EFA: no proxied host cost, and the
    # one-node replicas run out of KV cache and queue, so DeepEP wins on throughput
    page.select_option("#f-model", "glm-4.5")
    page.fill("#f-nodes", "2")
    page.select_option("#f-engine", "vllm")
    page.select_option("#f-cuda_graphs", "false")
    page.fill("#f-isl", "1024")
    page.fill("#f-osl", "256")
    page.fill("#f-concurrency", "1024")
    page.wait_for_selector("#verdict-cards .card-deepep.lit", timeout=20000)
    assert page.locator("#verdict-cards .card.lit").count() == 1
    page.screenshot(path=str(ARTIFACTS / "calculator-deepep-wins.png"), full_page=True)

    n = _updates(page)
    page.fill("#f-concurrency", "-1")
    error = page.locator('[data-error-for="concurrency"]')
    error.wait_for(state="visible")
    assert error.inner_text() == "concurrency: -1 is not allowed; expected a whole number greater than 0"
    page.locator("#scenario-form").screenshot(path=str(ARTIFACTS / "calculator-field-error.png"))
    page.fill("#f-concurrency", "512")
    _wait_update(page, n)
    assert error.is_hidden()

    page.click("nav >> text=Mechanism")
    page.wait_for_selector("#chart-flat .main-svg")
    lanes = page.locator("#path-diagram g.lane")
    assert [lanes.nth(i).locator("g.layer").count() for i in range(lanes.count())] == [5, 2]
    assert page.locator("#rc-srd tbody tr").count() >= 8
    page.screenshot(path=str(ARTIFACTS / "mechanism.png"), full_page=True)
    watch.assert_local(live_server.url, expected_statuses=(422,))
    page.close()


def test_server_and_browser_render_the_same(browser, live_server):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(live_server.url + "/?model=deepseek-v3&nodes=4&transport=efa-gda")
    page.wait_for_selector("body[data-ready]")
    server = page.locator("#arms-table").inner_text(), page.locator("#verdict-detail").inner_text()

    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-ready]")
    n = _updates(page)
    page.select_option("#f-model", "deepseek-v3")
    page.fill("#f-nodes", "4")
    page.select_option("#f-transport", "efa-gda")
    _poll(
        page,
        f"Number(document.body.dataset.updates || 0) > {n} && location.search.includes('efa-gda')"
        " && location.search.includes('nodes=4') && !document.body.dataset.busy",
    )
    browser_side = page.locator("#arms-table").inner_text(), page.locator("#verdict-detail").inner_text()
    assert browser_side == server
    watch.assert_local(live_server.url)
    page.close()


def test_config_paste_and_a_malformed_one(browser, live_server):  # noqa: F811
    config = (TESTS / "fixtures" / "hf" / "mixtral-8x7b" / "config.json").read_text()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-ready]")
    page.click("details.config summary")
    n = _updates(page)
    page.fill("#f-config-text", config)
    _wait_update(page, n)
    assert "8 experts" in page.locator("#model-summary").inner_text()
    page.fill("#f-config-text", '{"model_type": "qwen3_moe", "hidden_size": "big"}')
    error = page.locator('[data-error-for="config_json"]')
    error.wait_for(state="visible")
    assert error.inner_text().startswith("uploaded config.json:")
    assert "stale" in (page.locator("#results").get_attribute("class") or "")
    watch.assert_local(live_server.url, expected_statuses=(422,))
    page.close()


def test_form_works_with_javascript_off(browser, live_server):  # noqa: F811
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(live_server.url + "/")
    assert _lit(page) == "dense"
    page.select_option("#f-model", "kimi-k2")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert _lit(page) == "capacity"
    assert "kimi-k2" in page.locator("#scenario-line").inner_text()
    page.fill("#f-nodes", "0")
    with page.expect_navigation():
        page.click("button[type=submit]")
    error = page.locator('[data-error-for="nodes"]')
    assert error.is_visible()
    assert error.inner_text() == "nodes: 0 is not allowed; expected a whole number greater than 0"
    page.screenshot(path=str(ARTIFACTS / "calculator-no-javascript.png"), full_page=True)
    page.context.close()


def test_html_report_opens_offline_from_disk(browser, tmp_path):
    from deepep_calc.api import evaluate
    from deepep_calc.io.safe_write import write_atomic
    from deepep_calc.question.scenario import Scenario
    from deepep_calc.report.html import render_html

    path = tmp_path / "report.html"
    write_atomic(path, render_html(evaluate(Scenario(model="kimi-k2"))))  # as `report --html` writes it
    page, seen = offline_page(browser, {"width": 1300, "height": 1000})
    watch = Watch(page)
    page.goto(path.resolve().as_uri())
    _poll(page, "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 5")
    assert page.locator(".js-plotly-plot").count() == 5  # with what bounds each step
    assert _lit(page) == "capacity"
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert watch.errors == []
    assert all(u.startswith("file://") for u in seen)
    page.context.close()
