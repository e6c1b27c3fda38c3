"""The Plan page and the `plan --html` file in a real browser (Debian chromium, Playwright).

Skipped without /usr/bin/chromium unless DEEPEP_REQUIRE_BROWSER=1 (CI). Screenshots go to
test-artifacts/ (git-ignored).
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from web_fixtures import live_server  # noqa: F401  (fixture)

from .test_browser import ARTIFACTS, Watch, _poll, browser, offline_page  # noqa: F401  (one browser setup)

QUERY = urlencode(
    [
        ("model", "deepseek-v3"),
        ("isl", "1024"),
        ("osl", "256"),
        ("concurrency", "64"),
        ("slo_tok_s", "20"),
        ("instances", "p5en"),
        ("instances", "p6-b200"),
        ("engines", "vllm"),
        ("engines", "sglang"),
        ("max_nodes", "8"),
    ]
)


@pytest.mark.parametrize("width", [1440, 390])
def test_plan_page_fits_and_draws_the_frontier(browser, live_server, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    watch = Watch(page)
    page.goto(f"{live_server.url}/plan?{QUERY}")
    page.wait_for_selector("body[data-plan-ready]")
    _poll(page, "document.body.dataset.planChart === '1'")
    assert page.locator("#plan-chart .main-svg").count() >= 1
    assert page.locator("#plan-frontier tbody tr").count() >= 2
    assert "Cheapest meeting every target" in page.locator("#plan-answer").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / f"plan-{width}.png"), full_page=True)
    watch.assert_local(live_server.url)
    page.close()


def test_clicking_a_frontier_point_opens_its_card(browser, live_server):  # noqa: F811
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    watch = Watch(page)
    page.goto(f"{live_server.url}/plan?{QUERY}")
    _poll(page, "document.body.dataset.planChart === '1'")
    query = page.evaluate(
        "(() => { const d = document.getElementById('plan-chart').data;"
        " const t = d.find(x => x.name === 'frontier'); return t.customdata[0]; })()"
    )
    with page.expect_popup() as popup:
        page.evaluate(
            "q => document.getElementById('plan-chart').emit('plotly_click', {points: [{customdata: q}]})",
            query,
        )
    card = popup.value
    card.wait_for_load_state()
    assert card.url == f"{live_server.url}/?{query}"
    card.wait_for_selector("#verdict-cards .card.lit")
    assert "deepseek-v3" in card.locator("#scenario-line").inner_text()
    # the table links go to the same card
    href = page.locator("#plan-frontier tbody tr a").first.get_attribute("href")
    assert href == f"/?{query}"
    watch.assert_local(live_server.url)
    card.close()
    page.close()


def test_plan_form_works_with_javascript_off(browser, live_server):  # noqa: F811
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/plan")
    page.select_option("#p-model", "qwen3-30b-a3b-fp8")
    page.fill("#p-max_nodes", "2")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "Cheapest meeting every target" in page.locator("#plan-answer").inner_text()
    page.fill("#p-concurrency", "-4")
    with page.expect_navigation():
        page.click("button[type=submit]")
    error = page.locator('[data-error-for="concurrency"]')
    assert error.is_visible() and error.inner_text().startswith("--concurrency: -4")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
    page.context.close()


def test_plan_html_file_opens_offline_and_links_to_serve(browser, tmp_path):  # noqa: F811
    from deepep_calc.report.plan_html import render_plan_html
    from deepep_calc.whatif.plan.search import plan_request, run_plan

    plan = run_plan(
        plan_request(
            model="deepseek-v3",
            isl=1024,
            osl=256,
            concurrency=64,
            instances="p5en",
            engines="vllm",
            max_nodes=4,
        )
    )
    path = tmp_path / "plan.html"
    path.write_text(render_plan_html(plan))
    page, seen = offline_page(browser, {"width": 390, "height": 900})
    watch = Watch(page)
    page.goto(path.resolve().as_uri())
    _poll(page, "document.body.dataset.planChart === '1'")
    link = page.locator("#plan-frontier tbody tr a").first
    assert link.get_attribute("href").startswith("http://127.0.0.1:8000/?")
    page.fill("#serve-url", "http://127.0.0.1:9999/")
    assert link.get_attribute("href").startswith("http://127.0.0.1:9999/?model=deepseek-v3")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / "plan-file.png"), full_page=True)
    assert watch.errors == []
    assert all(u.startswith("file://") for u in seen)
    page.context.close()


# Nothing overprints, the frontier fits, copy copies commands (issue #26 item 8) ----------------

_LAYOUT = """() => {
  const rect = e => e.getBoundingClientRect();
  const text = e => e.textContent.trim().slice(0, 24);
  const cross = (a, b) =>
    a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const out = {overlaps: [], overflows: [], clipped: []};
  const pairs = (list, name) => list.forEach((a, i) => list.slice(i + 1).forEach(b => {
    if (cross(rect(a), rect(b))) out.overlaps.push(name(a) + ' / ' + name(b));
  }));
  pairs(Array.from(document.querySelectorAll('#plan-best > div')), text);
  document.querySelectorAll('#plan-best dd, #plan-best dt, #plan-best-label').forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1) out.overflows.push(text(e));
    const cell = rect(e.closest('div') || e.parentElement);
    if (rect(e).right > cell.right + 1) out.overflows.push('outside its cell: ' + text(e));
  });
  const blocks = Array.from(document.querySelectorAll('#plan-answer > *')).filter(e => rect(e).height > 0);
  pairs(blocks, e => e.tagName + '#' + e.id);
  document.querySelectorAll('.table-scroll').forEach(s => {
    const box = rect(s);
    s.querySelectorAll('th, td').forEach(c => {
      const head = c.closest('thead');  // read aloud only on a phone (the cells carry labels)
      if (head && getComputedStyle(head).position === 'absolute') return;
      const r = rect(c);
      if (r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1)) out.clipped.push(text(c));
    });
    if (s.scrollWidth > s.clientWidth + 1) out.clipped.push('wider: ' + s.scrollWidth + '>' + s.clientWidth);
  });
  out.page = [document.documentElement.scrollWidth, window.innerWidth];
  return out;
}"""

WIDTHS = [390, 600, 768, 1024, 1280, 1440]


def _assert_laid_out(page, where: str) -> None:
    got = page.evaluate(_LAYOUT)
    assert got["overlaps"] == [], (where, got["overlaps"])
    assert got["overflows"] == [], (where, got["overflows"])
    assert got["clipped"] == [], (where, got["clipped"][:5])
    assert got["page"][0] <= got["page"][1], (where, got["page"])


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_page_nothing_overprints_and_the_frontier_fits(browser, live_server, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{live_server.url}/plan?{QUERY}")
    page.wait_for_selector("body[data-plan-ready]")
    _poll(page, "document.body.dataset.planChart === '1'")
    _assert_laid_out(page, f"/plan at {width}")
    page.close()


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    from deepep_calc.report.plan_html import render_plan_html
    from deepep_calc.whatif.plan.search import plan_request, run_plan

    plan = run_plan(plan_request(model="deepseek-v3", isl=1024, osl=256, concurrency=64, slo_tok_s=20))
    path = tmp_path_factory.mktemp("plan") / "plan.html"
    path.write_text(render_plan_html(plan))
    return path, plan


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_html_nothing_overprints_and_the_frontier_fits(browser, plan_file, width):  # noqa: F811
    path, _ = plan_file
    page, _ = offline_page(browser, {"width": width, "height": 900})
    page.goto(path.resolve().as_uri())
    _poll(page, "document.body.dataset.planReady === '1'")
    _assert_laid_out(page, f"plan --html at {width}")
    page.context.close()


def test_copy_buttons_copy_the_command_only(browser, live_server):  # noqa: F811
    import json
    import urllib.request

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(f"{live_server.url}/plan?{QUERY}")
    page.wait_for_selector("body[data-plan-ready]")
    body = json.dumps(
        {"model": "deepseek-v3", "isl": 1024, "osl": 256, "concurrency": 64, "slo_tok_s": 20,
         "instances": ["p5en", "p6-b200"], "engines": ["vllm", "sglang"], "max_nodes": 8}
    ).encode()  # fmt: skip
    req = urllib.request.Request(
        f"{live_server.url}/api/plan", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req) as resp:
        best = json.load(resp)["best"]
    buttons = page.locator("#plan-flags button.copy")
    assert buttons.count() == len(best["flags"]["launch"]["blocks"])
    for i, block in enumerate(best["flags"]["launch"]["blocks"]):
        buttons.nth(i).click()
        _poll(page, f"document.querySelectorAll('#plan-flags button.copy')[{i}].textContent === 'copied'")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == block["text"].rstrip("\n"), (copied, block["text"])
        assert "```" not in copied and not copied.startswith("#")
    assert "```" not in page.locator("#plan-flags").inner_text()
    context.close()
