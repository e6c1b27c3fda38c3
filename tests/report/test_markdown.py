"""`report/markdown.py`: `deepep-calc report --md`, the verdict, the arms, the run block, the
model and every number's provenance as Markdown, each number with its tag in brackets and a
modelled one with its band, and no doubled punctuation in the text of five scenarios (a
fragile verdict among them).

`result` (DeepSeek-V3 on four nodes over EFA-GDA, every figure modelled) is `conftest.py`'s.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from deepep_calc.api import evaluate
from deepep_calc.estimate.result import Result
from deepep_calc.question.scenario import Scenario
from deepep_calc.report import markdown, view
from deepep_calc.report.markdown import render_markdown


@cache
def _markdown_of(**fields: object) -> str:
    return render_markdown(_evaluated(**fields))


@cache
def _evaluated(**fields: object) -> Result:
    return evaluate(Scenario(**fields))


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


def test_report_of_the_calibration_scenario_quotes_measured_cells():
    md = render_markdown(evaluate(Scenario()))
    assert "19.6 tok/s [measured]" in md and "27.6 tok/s [measured]" in md
    assert "14.7 ms/token [derived]" in md


def test_markdown_shows_bands_and_says_what_they_are(result):
    from deepep_calc.report.view import BAND_LEGEND, band_range

    md = render_markdown(result)
    data = result.to_json()
    agg = data["arms"]["deepep"]["aggregate_tok_s"]
    assert "low" in agg and f"({band_range(agg, 1)})" in md  # the modelled aggregate with its band
    assert BAND_LEGEND in md and "80 % of its out-of-sample misses" in BAND_LEGEND
    measured = evaluate(Scenario()).to_json()["arms"]["deepep"]["aggregate_tok_s"]
    assert measured["tag"] == "measured" and band_range(measured, 1) == ""  # a measurement has none


# direct: cells, sentences, figures, and the sections in their order ------------------------------


def test_a_cell_escapes_pipes_and_keeps_to_one_line() -> None:
    assert markdown._cell("a | b\n  c\t d") == "a \\| b c d"
    assert markdown._cell(12.5) == "12.5"


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ("Scenario: x", "Scenario: x."),
        ("ends well.", "ends well."),
        ("asks?", "asks?"),
        ("a list:", "a list:"),
    ],
)
def test_a_sentence_ends_in_one_full_stop(text: str, closed: str) -> None:
    assert markdown._sentence(text + "  ") == closed


def test_a_figure_reads_value_unit_tag_and_band() -> None:
    """869.2 tok/s modelled with an 80 % band of 760.3-901.7; a ratio (unit x) prints no unit and
    its band ends in ×; a measured figure has no band."""
    modelled = {"value": 869.24, "unit": "tok/s", "tag": "assumed", "low": 760.31, "high": 901.66}
    assert markdown._q(modelled, 1) == "869.2 tok/s [assumed] (760.3–901.7)"
    ratio = {"value": 0.6859, "unit": "x", "tag": "assumed", "low": 0.8351, "high": 1.194}
    assert markdown._q(ratio, 2) == "0.69 [assumed] (0.84–1.19×)"
    assert markdown._q({"value": 19.62, "unit": "tok/s", "tag": "measured"}, 2) == "19.62 tok/s [measured]"


def test_the_sections_come_in_order_and_the_recommended_arm_is_starred_once(result) -> None:
    md = render_markdown(result)
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert [h.split(" (")[0].split(":")[0] for h in heads] == [
        "## Why",
        "## Advisories",
        "## The arms",
        "## Run it",
        "## Model evaluated",
        "## Provenance",
    ]
    header = next(line for line in md.splitlines() if line.startswith("| | "))
    assert header.count(" ★") == 1
    assert f"{view.arm_label(result.to_json(), result.verdict.recommended_arm)} ★" in header


def test_the_provenance_table_has_a_row_per_number(result) -> None:
    md = render_markdown(result)
    table = md.split("## Provenance", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| number")]
    assert len(rows) == len(view.provenance_rows(result.to_json()))
    assert md.rstrip().endswith(".") and "**measured**: observed on hardware" in md


def test_the_model_paragraph_quotes_the_structure(result) -> None:
    """DeepSeek-V3: 256 routed experts, top-8, hidden 7168, 58 MoE layers of 61, MLA."""
    md = render_markdown(result)
    assert "256 experts, top-8, hidden 7168, 58 of 61 layers MoE, MLA attention" in md


def test_nothing_fits_says_so_in_the_run_section() -> None:
    """Kimi-K2 on one p5en node: no arm fits, so there is no launch block to paste."""
    md = _markdown_of(model="kimi-k2", nodes=1)
    assert "## Run it (trtllm, nothing fits as asked)" in md
    assert "Nothing runs as asked: apply one of the changes in the headline and evaluate again." in md
    assert "```" not in md.split("## Run it", 1)[1].split("## Model evaluated", 1)[0]


def test_a_disaggregated_scenario_gets_its_own_section() -> None:
    """1 prefill + 3 decode nodes: the split's figures, its two sides and where a request's time goes."""
    md = _markdown_of(model="deepseek-v3", prefill_nodes=1, decode_nodes=3)
    section = md.split("## Disaggregated prefill / decode: ", 1)[1].split("\n## ", 1)[0]
    assert section.startswith("1P3D: 1 prefill + 3 decode nodes, KV over ")
    assert "| | prefill side | decode side |" in section
    assert "Where one request's time goes:" in section
    assert "## Disaggregated" not in render_markdown(_evaluated())  # an aggregated scenario has none


DOUBLED = re.compile(r"\.\.(?!\.)|[.:;,] ?[.;,]|\) ?\.\)")


SCENARIOS = [
    Scenario(),
    Scenario(  # a fragile verdict
        model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, transport="efa-uccl", concurrency=8
    ),
    Scenario(model="kimi-k2", instance="p5", nodes=1),
    Scenario(instance="p6-b300", transport="efa-gda"),
    Scenario(slo_tok_s=50, ttft_ms=10, alternative="tp"),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.model}-{s.instance}-{s.nodes}")
def test_markdown_report_has_no_doubled_punctuation(scenario: Scenario) -> None:
    text = render_markdown(evaluate(scenario))
    hits = [
        m.group(0) for line in text.splitlines() if not line.startswith("|") for m in DOUBLED.finditer(line)
    ]
    assert hits == []


def test_fragile_robustness_line_keeps_one_full_stop() -> None:
    result = evaluate(SCENARIOS[1])
    assert result.verdict.robustness.endswith(".")  # the case that used to print ".."
    line = next(x for x in render_markdown(result).splitlines() if x.startswith("Verdict is"))
    assert line.endswith(".") and not line.endswith("..")
