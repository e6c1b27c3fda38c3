"""`report/html.py`: `deepep-calc report --html`, one self-contained HTML file (no remote
reference, plotly.js and the figures inline) drawn with the page's macros; the command writes it
through `io/safe_write.py` (tested in `tests/io/test_safe_write.py`).

The scenario (DeepSeek-V3 on four nodes over EFA-GDA, every figure modelled) is `conftest.py`'s
`result`. The `report` command around it is `tests/cli/commands/test_web.py`'s; the Markdown
report is `test_markdown.py`'s.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from deepep_calc.base.version import __version__
from deepep_calc.report import html as html_module
from deepep_calc.report.html import render_html
from deepep_calc.report.view import provenance_rows


class Refs(HTMLParser):
    """Every src / href on an element (script bodies are opaque to the parser, as to a browser)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.chart_data = ""
        self._in_chart = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        for key in ("src", "href", "action", "data"):
            if a.get(key) is not None:
                self.refs.append((tag, key, a[key]))
        self._in_chart = tag == "script" and a.get("id") == "chart-data"

    def handle_data(self, data):
        if self._in_chart:
            self.chart_data += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_chart = False


@pytest.fixture(scope="module")
def html(result):
    return render_html(result)


def test_html_is_self_contained(html):
    parser = Refs()
    parser.feed(html)
    remote = [r for r in parser.refs if re.match(r"(?i)\s*(https?:)?//", r[2]) and "127.0.0.1" not in r[2]]
    assert remote == []
    assert "link" not in parser.tags  # no external stylesheet
    assert not re.search(r"<script[^>]*\ssrc=", html)  # every script is inline
    assert "@import" not in html


def test_html_inlines_plotly_and_the_figures(html):
    assert len(html) > 1_000_000 and "Plotly" in html  # plotly.js itself
    parser = Refs()
    parser.feed(html)
    charts = json.loads(parser.chart_data)
    assert set(charts) == {"per_user", "breakdown", "bound", "memory", "verdict_map"}
    assert all(fig["data"] for fig in charts.values())


def test_html_has_verdict_arms_and_provenance(result, html):
    v = result.verdict
    assert f'class="card card-{v.code} lit"' in html
    assert html.count(' lit"') == 1
    assert v.headline.split(":")[0] in html
    assert 'id="arms-table"' in html
    rows = provenance_rows(result.to_json())
    table = html.split('id="provenance-table"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == len(rows) + 1  # + the header row
    assert (
        html.count('title="measured: ') + html.count('title="derived: ') + html.count('title="assumed: ') > 30
    )


def test_html_arms_table_shows_bands(result, html):
    from deepep_calc.report.view import band_range

    table = html.split('id="arms-table"', 1)[1].split("</table>", 1)[0]
    step = result.to_json()["arms"]["deepep"]["step_ms"]
    assert f"({band_range(step, 2)})" in table


# direct: the script guard, the context, the stamp -----------------------------------


def test_inline_script_cannot_close_its_element_early() -> None:
    """An HTML parser ends a script at the first `</script`, and `<!--` in a script changes how it
    looks for that end: a backslash breaks both, and inside a JavaScript string `<\\/` still
    reads `</`."""
    text = 'var s = "</script><script>alert(1)</script>"; // <!-- x'
    guarded = html_module.inline_script(text)
    assert guarded == 'var s = "<\\/script><script>alert(1)<\\/script>"; // <\\!-- x'
    assert "</script" not in guarded and "<!--" not in guarded
    assert html_module.inline_script("plain(1);") == "plain(1);"


def test_every_script_element_of_the_page_is_closed_once(html) -> None:
    """plotly.js, charts.js and the figures are inlined whole: as many closings as openings, so
    none of them ended its element early."""
    assert html.count("<script") == html.count("</script>") >= 3


def test_the_context_lights_the_verdicts_card_and_names_the_command(result) -> None:
    ctx = html_module.report_context(result)
    lit = [c for c in ctx["cards"] if c["lit"]]
    assert [c["code"] for c in lit] == [result.verdict.code]
    assert ctx["verdict"]["headline"] == result.verdict.headline
    assert ctx["cli"] == "deepep-calc evaluate --model deepseek-v3 --nodes 4 --transport efa-gda"
    assert ctx["summary"].startswith("deepseek-v3 (")


def test_the_page_says_which_version_wrote_it_and_when(html) -> None:
    assert re.search(rf"deepep-calc {re.escape(__version__)}, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", html)
