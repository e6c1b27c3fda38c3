"""The verdict on the page, rendered by the server and by the page's JavaScript alike.

The JavaScript mirrors a few view functions (compared row, comparison rows, run blocks, the lit
card's title); these checks load a scenario server-side, then reach the same scenario by editing
the form, and require the same text: a figure the rule compared reads the same either way.
"""

from __future__ import annotations

import pytest

from web_fixtures import live_server  # noqa: F401  (fixture)

from .test_browser import Watch, _poll, _updates, browser  # noqa: F401  (fixture)

PARTS = ("#verdict-cards", "#arms-table", "#compare-table", "#verdict-detail")


def _texts(page) -> list[str]:
    return [page.locator(sel).inner_text() for sel in PARTS]


@pytest.mark.parametrize(
    ("query", "edits", "needles"),
    [
        (
            "transport=efa-uccl",
            [("select", "#f-transport", "efa-uccl")],
            ["Compared aggregate (like with like)", "609.2", "set aside"],
        ),
        (
            "model=deepseek-v3&instance=p5&nodes=1",
            [
                ("select", "#f-model", "deepseek-v3"),
                ("select", "#f-instance", "p5"),
                ("fill", "#f-nodes", "1"),
            ],
            ["Nothing fits on 1× p5", "CAPACITY: nothing fits as asked", "Nothing runs as asked"],
        ),
        (  # one node: the arm's head and the headline name NVLink, not the configured efa-proxy
            "model=deepseek-v3&nodes=1",
            [("select", "#f-model", "deepseek-v3"), ("fill", "#f-nodes", "1")],
            ["DeepEP (NVLink)", "DeepEP over NVLink"],
        ),
    ],
)
def test_server_and_browser_render_the_verdict_alike(browser, live_server, query, edits, needles):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(f"{live_server.url}/?{query}")
    page.wait_for_selector("body[data-ready]")
    server = _texts(page)
    for needle in needles:
        assert any(needle in part for part in server), needle

    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-ready]")
    for kind, selector, value in edits:
        n = _updates(page)
        if kind == "select":
            page.select_option(selector, value)
        else:
            page.fill(selector, value)
        _poll(page, f"Number(document.body.dataset.updates || 0) > {n} && !document.body.dataset.busy")
    assert _texts(page) == server
    watch.assert_local(live_server.url)
    page.close()
