"""`deepep-calc report`: a self-contained HTML file and a Markdown summary, written atomically."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from deepep_calc.api import evaluate
from deepep_calc.cli import main
from deepep_calc.question.scenario import Scenario
from deepep_calc.report.html import render_html, write_atomic
from deepep_calc.report.markdown import render_markdown
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
def result():
    return evaluate(Scenario(model="deepseek-v3", nodes=4, transport="efa-gda"))


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


def test_markdown_has_verdict_and_tags(result):
    md = render_markdown(result)
    v = result.verdict
    assert md.startswith("# deepep-calc report")
    assert f"**{v.symbol} {v.title}**" in md
    for tag in ("[derived]", "[assumed]"):  # nothing is measured at this scenario (see below)
        assert tag in md
    assert "[measured]" not in md
    assert "| Per-user decode |" in md
    assert "deepep-calc evaluate --model deepseek-v3 --nodes 4 --transport efa-gda" in md
    for line in md.splitlines():  # every table row keeps its column count
        if line.startswith("| Per-user decode"):
            assert line.count(" | ") == 3


def test_markdown_escapes_pipes_in_sources(monkeypatch, result):
    from deepep_calc.report import markdown

    real = markdown.render_markdown.__globals__["view"].provenance_rows

    def with_pipe(data):
        rows = real(data)
        rows[0]["source"] = "a | b"
        return rows

    monkeypatch.setattr("deepep_calc.report.view.provenance_rows", with_pipe)
    assert "a \\| b" in render_markdown(result)


def test_cli_writes_both_files(tmp_path, capsys):
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    main(["report", "--html", str(html_path), "--md", str(md_path), "--model", "kimi-k2"])
    assert html_path.stat().st_size > 1_000_000
    assert "◆ Use EP for CAPACITY: allgather" in md_path.read_text()  # title names the arm run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.md"]  # no temp files left
    out = capsys.readouterr().out
    assert out.count("deepep-calc: wrote") == 2
    assert oct(html_path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_bad_input_writes_nothing(tmp_path, capsys):
    target = tmp_path / "r.html"
    target.write_text("previous report")
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(target), "--md", str(tmp_path / "r.md"), "--concurrency", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "deepep-calc: error: --concurrency: -1 is not allowed; expected a whole number greater than 0"
    ]
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_missing_folder_and_missing_target_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(tmp_path / "no" / "such" / "r.html")])
    assert info.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    main(["report"])  # no file named: Markdown to stdout, nothing written
    assert capsys.readouterr().out.startswith("# deepep-calc report")


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    target = tmp_path / "r.md"

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    from deepep_calc.base.errors import FileInputError

    with pytest.raises(FileInputError, match="No space left"):
        write_atomic(target, "text")
    assert list(tmp_path.iterdir()) == []


def test_report_of_the_calibration_scenario_quotes_measured_cells(tmp_path):
    md = render_markdown(evaluate(Scenario()))
    assert "19.6 tok/s [measured]" in md and "27.6 tok/s [measured]" in md
    assert "14.7 ms/token [derived]" in md
    path = write_atomic(tmp_path / "x.md", md)
    assert Path(path).read_text() == md


# error bands (issue 9: every modelled figure says how sure it is) ------------------------------

CLOSE = Scenario(transport="efa-gda")  # both arms modelled, ratio 1.00 inside a 0.83-1.19x band


def _headline_band(headline: str) -> str:
    m = re.search(r"error band (\d\.\d\d–\d\.\d\d×)", headline)
    assert m, headline
    return m.group(1)


def test_markdown_shows_bands_and_says_what_they_are(result):
    from deepep_calc.report.view import BAND_LEGEND, band_range

    md = render_markdown(result)
    data = result.to_json()
    agg = data["arms"]["deepep"]["aggregate_tok_s"]
    assert "low" in agg and f"({band_range(agg, 1)})" in md  # the modelled aggregate with its band
    assert BAND_LEGEND in md and "80 % of its out-of-sample misses" in BAND_LEGEND
    measured = evaluate(Scenario()).to_json()["arms"]["deepep"]["aggregate_tok_s"]
    assert measured["tag"] == "measured" and band_range(measured, 1) == ""  # a measurement has none


def test_close_call_band_in_reports_matches_the_headline():
    """The compared ratio's band beside the ratio is the one the "too close to call" text quotes."""
    close = evaluate(CLOSE)
    assert close.verdict.close_call
    band = _headline_band(close.verdict.headline)
    md = render_markdown(close)
    row = next(line for line in md.splitlines() if line.startswith("| DeepEP / alternative, aggregate"))
    assert f"({band})" in row
    page = render_html(close)
    compare = page.split('id="compare-table"', 1)[1].split("</table>", 1)[0]
    assert '<span class="band"' in compare and f"({band})" in compare
    assert 'id="band-legend"' in page


def test_html_arms_table_shows_bands(result, html):
    from deepep_calc.report.view import band_range

    table = html.split('id="arms-table"', 1)[1].split("</table>", 1)[0]
    step = result.to_json()["arms"]["deepep"]["step_ms"]
    assert f"({band_range(step, 2)})" in table
