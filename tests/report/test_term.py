"""`report/term.py`: the building blocks every terminal view shares, and the house rules they
encode, at 80 columns (what a pipe gets) and at 200: nothing cut, nothing too wide.

The views are rendered through the CLI with COLUMNS set, the way a user's shell would
(`rendering.py`). The checks: no line is wider than the terminal, rich never had to cut a cell
(no ellipsis), tags are markers with a legend, footnotes and source lines stop short of the last
column. Then each block on its own: numbers, tagged cells, the legend, sentences, footnotes,
sources by row, prose, and the table and column kinds. What each view shows is its module's
test (`test_catalogs.py`, `test_reference_views.py`, `test_validation_view.py`, ...).
"""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from cli_runner import run_cli
from deepep_calc.base.quantity import Q
from deepep_calc.report import term

from .rendering import WIDTHS, assert_fits, render

VIEWS = [
    ("models",),
    ("instances",),
    ("transports",),
    ("models", "--sources"),
    ("instances", "--sources"),
    ("transports", "--sources"),
    ("kernel",),
    ("kernel", "--transport", "efa-gda", "--tokens", "64"),
    ("validate",),
    ("validate", "--sources"),
    ("breakeven",),
    ("breakeven", "--model", "deepseek-v3", "--nodes", "4", "--concurrency", "256"),
    pytest.param(("sensitivity",), marks=pytest.mark.slow),  # a refit per end of every spread
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", VIEWS, ids=lambda a: " ".join(a))
def test_view_fits_and_cuts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, args: tuple[str, ...]
) -> None:
    text = render(capsys, monkeypatch, width, *args)
    assert_fits(text, width)
    assert "[measured]" not in text and "[assumed]" not in text  # markers, not words in brackets
    if any(mark in text for mark in "●◐○"):  # a view that marks tags explains the markers
        assert "● measured  ◐ derived  ○ assumed" in text  # the legend, once


def test_marker_legend_explains_every_marker() -> None:
    legend = term.legend().plain
    for tag, mark in term.TAG_MARK.items():
        assert f"{mark} {tag}" in legend
    assert len(legend) <= 80


def test_sentence_turns_bracketed_tags_into_markers() -> None:
    text = term.sentence("DeepEP 19.6 tok/s [measured] vs 27.6 tok/s [measured]: a tax of 14.7 ms [derived].")
    assert text.plain == "DeepEP 19.6 tok/s ● vs 27.6 tok/s ●: a tax of 14.7 ms ◐."
    assert term.sentence("no tags [here]").plain == "no tags [here]"


@pytest.mark.parametrize(
    "args", [["kernel"], ["kernel", "--transport", "efa-gda"], ["models"], ["models", "--sources"]]
)
def test_footnotes_and_source_lines_fit_80_columns(monkeypatch, capsys, args: list[str]) -> None:
    from rich.cells import cell_len

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    lines = out.splitlines()
    assert all(cell_len(line) < 80 for line in lines), [line for line in lines if cell_len(line) >= 80]
    assert not any(line != line.rstrip() for line in lines if line.startswith(("[", " ")) and "[" in line[:5])
    if args == ["models"]:  # the footnote is a whole sentence
        assert "* the routed experts' dtype; the rest of the model is in bf16" in lines
    if args[0] == "kernel":  # the source is whole, wrapped at a space and continued under itself
        joined = " ".join(line.strip() for line in out.split("Sources", 1)[1].splitlines() if line.strip())
        assert "QP cap 2, cached handle" in joined or "[1]" in joined


# the blocks, one at a time ---------------------------------------------------------------------


def console(width: int) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, color_system=None, highlight=False, soft_wrap=False), buf


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (1234.567, 1, "1,234.6"),
        (1234.567, 0, "1,235"),
        (-0.25, 2, "-0.25"),
        ("3", 1, "3.0"),  # JSON may carry a number as text
        (None, 1, "n/a"),
        (math.nan, 1, "n/a"),
        (math.inf, 1, "n/a"),
        (-math.inf, 2, "n/a"),
    ],
)
def test_a_number_is_grouped_with_fixed_decimals_or_says_n_a(value: object, digits: int, shown: str) -> None:
    assert term.number(value, digits) == shown


def test_a_tagged_cell_is_the_number_and_its_marker() -> None:
    """`19.62 ●` in a column whose header carries the unit; with `unit=True` the unit sits
    between; a ratio's unit (x, 1, ratio) is never printed; n/a takes no unit."""
    q = Q.measured(19.62, "tok/s", "cell")
    assert term.qcell(q, 2).plain == "19.62 ●"
    assert term.qcell(q, 2, unit=True).plain == "19.62 tok/s ●"
    ratio = {"value": 0.6859, "unit": "x", "tag": "derived", "source": ""}
    assert term.qcell(ratio, 2, unit=True).plain == "0.69 ◐"
    assert term.qcell({"value": None, "unit": "ms", "tag": "assumed"}, 1, unit=True).plain == "n/a ○"
    assert term.qcell(None).plain == "—"
    styles = {str(s.style) for s in term.qcell(q, 2).spans}
    assert styles == {term.TAG_STYLE["measured"]}


def test_value_and_unit_read_a_quantity_or_its_json_alike() -> None:
    q = Q.derived(14.7, "ms/token", "s")
    assert term.value_of(q) == term.value_of(q.to_json()) == 14.7
    assert term.unit_of(q) == term.unit_of(q.to_json()) == "ms/token"
    assert [term.unit_of({"unit": u}) for u in ("1", "x", "ratio", "GB")] == ["", "", "", "GB"]


def test_every_tag_has_a_marker_a_style_and_words_and_the_markers_differ() -> None:
    assert term.TAG_MARK.keys() == term.TAG_STYLE.keys() == term.TAG_WORDS.keys()
    assert len(set(term.TAG_MARK.values())) == 3 and all(len(m) == 1 for m in term.TAG_MARK.values())
    assert term.marker("measured").plain == "●" and term.marker("no such tag").plain == "?"


def test_the_legend_is_49_columns_as_its_docstring_says() -> None:
    assert term.legend().plain == "● measured  ◐ derived  ○ assumed (verify locally)"
    assert term.legend().cell_len == 49


def test_a_sentence_keeps_its_style_and_marks_each_tag_in_its_colour() -> None:
    text = term.sentence("a [assumed] b [derived]", style="bold")
    assert text.plain == "a ○ b ◐" and str(text.style) == "bold"
    assert [text.plain[s.start : s.end] for s in text.spans] == ["○", "◐"]


def test_footnotes_number_each_distinct_source_once() -> None:
    notes = term.Footnotes()
    assert [notes.ref(t) for t in ("alpha", "beta", "alpha", "", None, "gamma")] == [
        "[1]",
        "[2]",
        "[1]",
        "",
        "",
        "[3]",
    ]
    assert notes.texts == ["alpha", "beta", "gamma"]


def test_footnote_lines_stop_short_of_the_last_column_and_hang_under_their_text() -> None:
    """Ten notes: the marks are right-aligned to `[10]`, so `[1]` leads with a space and every
    continuation starts five columns in. Width 40: at most 39 columns a line."""
    notes = term.Footnotes()
    for i in range(10):
        notes.ref(f"source {i} " + "word " * 12)
    lines = notes.lines(40)
    assert lines[0].startswith(" [1] source 0 word") and max(len(line) for line in lines) <= 39
    assert lines[1].startswith("     word")
    assert any(line.startswith("[10] source 9") for line in lines)
    assert min(len(line) for line in notes.lines(5)) > 5  # a narrow terminal keeps 20 columns of text


def test_footnotes_print_under_a_heading_only_when_there_are_any() -> None:
    c, buf = console(80)
    term.Footnotes().print(c)
    assert buf.getvalue() == ""
    notes = term.Footnotes()
    notes.ref("a cited run")
    notes.print(c, heading="Cited")
    assert buf.getvalue().splitlines() == ["Cited", "[1] a cited run"]
    grid = notes.render()
    assert grid.row_count == 1


def test_sources_by_row_line_up_under_the_longest_key() -> None:
    c, buf = console(40)
    term.print_sources_by_row(c, [("ab", "short"), ("abcdef", "one two three four five six seven eight")])
    lines = buf.getvalue().splitlines()
    assert lines[0] == "Sources"
    assert lines[1] == "ab      short"  # keys padded to len("abcdef") + 2
    assert lines[2].startswith("abcdef  one two")
    assert all(len(line) <= 39 for line in lines) and lines[3].startswith("        ")
    c, buf = console(40)
    term.print_sources_by_row(c, [])
    assert buf.getvalue() == ""


def test_prose_wraps_at_spaces_short_of_the_last_column() -> None:
    c, buf = console(50)
    term.print_prose(c, " ".join(["word"] * 40))
    lines = buf.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 49 for line in lines)
    assert " ".join(" ".join(lines).split()) == " ".join(["word"] * 40)


def test_the_sources_hint_names_the_command() -> None:
    assert term.sources_hint("deepep-calc models").plain == (
        "sources of every row: deepep-calc models --sources (or --json)"
    )


def test_a_wide_terminal_starts_at_120_columns() -> None:
    assert not term.wide(console(term.WIDE - 1)[0]) and term.wide(console(term.WIDE)[0])
    assert term.WIDE == 120


def test_numbers_and_ids_never_wrap_prose_does_and_the_table_has_no_frame() -> None:
    """On 40 columns a 12-digit number and a long id stay whole on one line; the prose column
    takes the squeeze; no vertical rule is drawn, one rule of dashes sits under the header."""
    c, buf = console(40)
    t = term.table(term.id_col("id"), term.num_col("n"), term.text_col("prose"), title="T")
    t.add_row("trt-ab-k8-c16-isl2048", "123,456,789,012", "a sentence that must wrap to fit the rest")
    c.print(t)
    text = buf.getvalue()
    assert any("trt-ab-k8-c16-isl2048" in line and "123,456,789,012" in line for line in text.splitlines())
    assert "│" not in text and "┃" not in text and "…" not in text
    assert sum(1 for line in text.splitlines() if set(line.strip()) <= {"─", " "} and line.strip()) == 1
    assert all(len(line) <= 40 for line in text.splitlines())


def test_a_view_console_reads_the_columns_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "97")
    c = term.console()
    assert c.width == 97 and c.soft_wrap is False
