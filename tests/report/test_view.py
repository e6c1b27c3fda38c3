"""`report/view.py`: what the page and the HTML / Markdown reports show, decided once: the number
format, error bands, the arms and comparison rows, the provenance table, the verdict's sentences
as tag segments, the cards, the summary and command lines, and the Jinja environment.

Everything works on `Result.to_json()`: the comparison rows, targets and cards are checked on
small JSON objects built by hand (each case's expected labels worked from `COMPARE_ROWS` and the
arms' names), the rest on evaluated scenarios.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.base.vocabulary import VERDICT_CODES, VERDICTS_SHOWN
from deepep_calc.decide.verdict import TITLES
from deepep_calc.estimate.result import Result
from deepep_calc.report import term, view
from deepep_calc.report.html import render_html
from deepep_calc.report.labels import arm_head
from deepep_calc.report.markdown import render_markdown
from deepep_calc.report.view import tag_segments, verdict_text

DEFAULT = Scenario()


@cache
def _result(**fields: object) -> Result:
    return evaluate(Scenario(**fields))


@pytest.mark.parametrize(
    "text",
    [
        "DeepEP reaches 0.69 [derived] of the aggregate and pays 14.7 ms/token [derived] more.",
        "[measured] at the start, and [assumed] at the end [assumed]",
        "no tags at all",
        "a bracket [that is not a tag] stays text",
    ],
)
def test_tag_segments_round_trip(text: str) -> None:
    segments = tag_segments(text)
    assert "".join(s.get("text", f"[{s.get('tag')}]") for s in segments) == text
    assert not any("[measured]" in s.get("text", "") or "[derived]" in s.get("text", "") for s in segments)


def test_verdict_text_covers_every_sentence() -> None:
    v = evaluate(DEFAULT).to_json()["verdict"]
    vt = verdict_text(v)
    assert len(vt["reasons"]) == len(v["reasons"]) and len(vt["advisories"]) == len(v["advisories"])
    assert any("tag" in s for s in vt["headline"])
    assert vt["robustness"][0]["text"].startswith("Verdict is ")


def test_a_band_keeps_four_significant_digits() -> None:
    from deepep_calc.report.view import band_digits

    assert band_digits(1130.9, 1291.4, 1) == 0  # thousands: whole numbers
    assert band_digits(760.3, 901.7, 1) == 1  # hundreds: the figure's one decimal
    assert band_digits(10.10, 12.93, 2) == 2  # never more than the figure's own decimals
    assert band_digits(0.84, 1.20, 2) == 2
    assert band_digits(79_000.0, 81_000.0, 0) == 0


CLOSE = Scenario(transport="efa-gda")  # both arms modelled, ratio 1.00 inside a 0.83-1.19x band


def _headline_band(headline: str) -> str:
    m = re.search(r"error band (\d\.\d\d–\d\.\d\d×)", headline)
    assert m, headline
    return m.group(1)


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


# numbers and bands ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (1234.5, 1, "1,234.5"),
        (0.6859, 2, "0.69"),
        ("12", 0, "12"),
        (None, 1, "n/a"),
        (math.nan, 2, "n/a"),
        ("1P3D", 1, "1P3D"),
    ],
)
def test_the_one_number_format(value: Any, digits: int, shown: str) -> None:
    """en-US grouping, fixed decimals; a missing or NaN value reads n/a; text stays text."""
    assert view.fmt(value, digits) == shown


@pytest.mark.parametrize(
    ("q", "digits", "band"),
    [
        ({"value": 800.0, "unit": "tok/s", "low": 760.31, "high": 901.66}, 1, "760.3–901.7"),
        ({"value": 1.0, "unit": "x", "low": 0.8351, "high": 1.1949}, 2, "0.84–1.19×"),  # a ratio ends in ×
        ({"value": 1200.0, "unit": "tok/s", "low": 1130.9, "high": 1291.4}, 1, "1,131–1,291"),  # 4 digits
        ({"value": 1.0, "unit": "1", "low": 0.9, "high": 1.1}, 2, "0.90–1.10×"),
        ({"value": 800.0, "unit": "tok/s"}, 1, ""),  # measured: no band
        ({"value": 800.0, "unit": "tok/s", "low": None, "high": None}, 1, ""),
        (None, 1, ""),
    ],
)
def test_a_band_as_every_face_prints_it(q: Any, digits: int, band: str) -> None:
    assert view.band_range(q, digits) == band


def test_a_quantity_and_its_json_give_the_same_band() -> None:
    q = Q.assumed(869.14, "tok/s", "model").with_band(757.68, 910.57)
    assert view.band_range(q, 1) == view.band_range(q.to_json(), 1) == "757.7–910.6"


@pytest.mark.parametrize(
    ("low", "high", "digits", "shown"),
    [
        (0.5, 0.9, 3, 3),
        (99.0, 99.99, 1, 1),
        (99.0, 100.5, 2, 1),
        (9_999.0, 10_001.0, 1, 0),
        (math.nan, 1.0, 2, 2),
    ],
)
def test_band_digits_at_the_decade_edges(low: float, high: float, digits: int, shown: int) -> None:
    """Below 1 the figure's own decimals; 99.99 has two digits before the point, so one after;
    100.5 has three, so one; from 10,000 none (never below zero); NaN keeps the figure's."""
    assert view.band_digits(low, high, digits) == shown


def test_a_ratios_unit_is_not_shown_and_dig_follows_a_dotted_path() -> None:
    assert [view.unit_shown(u) for u in ("x", "1", "ms", "tok/s")] == ["", "", "ms", "tok/s"]
    assert view.dig({"a": {"b": {"c": 3}}}, "a.b.c") == 3
    with pytest.raises(KeyError):
        view.dig({"a": {}}, "a.b")


# the comparison rows, on hand-built JSON ---------------------------------------------------------


def q(value: float | None, unit: str = "x") -> dict[str, Any]:
    return {"value": value, "unit": unit, "tag": "derived", "source": "s"}


def result_json(ratio: float, tax: float, verdict: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "scenario": {"alternative": "allgather"},
        "ratio_deepep_vs_alternative": q(ratio),
        "ratio_per_user": q(ratio + 0.02),
        "tax_ms_per_token": q(tax, "ms/token"),
    }


def labels(data: dict[str, Any]) -> list[str]:
    return [row[0] for row in view.compare_rows(data)]


def test_without_a_verdict_the_rows_are_the_results_own_ratios() -> None:
    data = result_json(0.69, 14.7)
    rows = view.compare_rows(data)
    assert [r[0] for r in rows] == [
        "DeepEP / alternative, aggregate",
        "DeepEP / alternative, per user",
        "DeepEP tax per token",
    ]
    assert [r[1]["value"] for r in rows] == [0.69, 0.71, 14.7] and [r[2] for r in rows] == [2, 2, 1]


def test_a_negative_tax_is_a_saving_and_a_longer_step_beside_a_win_says_why() -> None:
    saving = view.compare_rows(result_json(0.9, -3.0))[2]
    assert saving[0] == view.SAVING_LABEL and saving[1]["value"] == 3.0
    assert labels(result_json(1.2, 3.0))[2] == view.LONGER_LABEL


def test_a_comparison_that_cannot_be_made_carries_its_note() -> None:
    compared = {
        "ratio": None,
        "per_user_ratio": None,
        "tax_ms_per_token": None,
        "note": "allgather cannot run",
    }
    rows = view.compare_rows(result_json(0.69, 14.7, {"compared": compared, "deciding": None}))
    assert [(r[1], r[3]) for r in rows] == [(None, "allgather cannot run")] * 3


def deciding(a: str, b: str, tax: float) -> dict[str, Any]:
    d = {"arms": [a, b], "ratio": q(0.72), "per_user_ratio": q(0.71), "tax_ms_per_token": q(tax, "ms/token")}
    return {
        "compared": {"ratio": q(0.69), "per_user_ratio": q(0.7), "tax_ms_per_token": q(1.0), "note": ""},
        "deciding": d,
    }


def test_rows_follow_the_comparison_that_decided() -> None:
    """The replicas decided: DeepEP is set against them, and the tax says against whom. With
    DeepEP out of contention the replicas lead, against allgather."""
    against = result_json(0.69, 14.7, deciding("deepep", "replica", 2.0))
    assert labels(against) == [
        "DeepEP / single-node replicas, aggregate",
        "DeepEP / single-node replicas, per user",
        "DeepEP tax per token (against single-node replicas)",
    ]
    assert view.compare_rows(against)[0][1]["value"] == 0.72
    out = result_json(0.69, 14.7, deciding("replica", "allgather", -2.0))
    assert labels(out) == [
        "single-node replicas / allgather, aggregate",
        "single-node replicas / allgather, per user",
        "single-node replicas saving per token (against allgather)",
    ]
    usual = result_json(0.69, 14.7, deciding("deepep", "allgather", 2.0))
    assert view.deciding_other(usual) is None and labels(usual)[0] == "DeepEP / alternative, aggregate"


def test_the_compared_aggregate_row_appears_only_when_it_differs_from_the_shown_one() -> None:
    arms = {"deepep": {"aggregate_tok_s": q(545.0)}, "allgather": {"aggregate_tok_s": q(794.6)}}
    same = {
        "verdict": {"compared": {"aggregate_tok_s": {"deepep": q(545.0), "allgather": q(794.6)}}},
        "arms": arms,
    }
    assert view.compared_row(same) is None
    other = {
        "verdict": {"compared": {"aggregate_tok_s": {"deepep": q(800.0), "allgather": q(794.6)}}},
        "arms": arms,
    }
    assert view.compared_row(other) == {"deepep": q(800.0), "allgather": q(794.6)}
    assert view.compared_row({"verdict": None, "arms": arms}) is None


def test_each_target_set_gets_a_status_row() -> None:
    both = {"scenario": {"slo_tok_s": 40.0, "ttft_ms": 300.0}}
    assert view.target_rows(both) == [
        ("Per-user floor (≥ 40 tok/s)", "slo_status"),
        ("TTFT ceiling (≤ 300 ms)", "ttft_status"),
    ]
    assert view.target_rows({"scenario": {"slo_tok_s": None}}) == []


# cards, lines, the provenance table -------------------------------------------------------------


def test_three_cards_in_the_cards_order_the_verdicts_lit_with_its_own_words() -> None:
    data = {"verdict": {"code": "capacity", "title": "Use EP for CAPACITY: allgather", "blurb": "why here"}}
    cards = view.verdict_cards(data)
    assert [c["code"] for c in cards] == list(VERDICTS_SHOWN)
    lit = [c for c in cards if c["lit"]]
    assert [(c["code"], c["title"], c["blurb"]) for c in lit] == [
        ("capacity", "Use EP for CAPACITY: allgather", "why here")
    ]
    assert lit[0]["blurb_segments"] == [{"text": "why here"}]
    for c in cards:
        if not c["lit"]:
            assert (c["title"], c["blurb"], c["blurb_segments"]) == (
                TITLES[c["code"]],
                view.VERDICT_BLURB[c["code"]],
                None,
            )
    assert not any(c["lit"] for c in view.verdict_cards({"verdict": None}))


def test_every_verdict_has_a_blurb_and_every_tag_a_meaning() -> None:
    assert set(view.VERDICT_BLURB) == set(VERDICT_CODES)
    assert set(view.TAG_MEANING) == set(term.TAG_MARK)
    assert set(view._COMPARED_KEY) == {key for _, key, _ in view.COMPARE_ROWS}


def test_the_scenario_summary_names_the_route_and_the_split() -> None:
    assert view.scenario_summary(_result().to_json()) == (
        "qwen3-30b-a3b-fp8 (fp8) on 2x p5en (16 GPUs), trtllm eager, DeepEP over efa-proxy with "
        "EP_NUM_COMMS=8, concurrency 32, ISL 120 / OSL 128"
    )
    one = view.scenario_summary(_result(nodes=1).to_json())
    assert "on 1x p5en (8 GPUs)" in one and "DeepEP over NVLink," in one and "EP_NUM_COMMS" not in one
    split = view.scenario_summary(_result(model="deepseek-v3", prefill_nodes=1, decode_nodes=3).to_json())
    assert split.endswith(", disaggregated 1P3D (KV over nixl-libfabric)")


def test_the_command_line_names_only_the_flags_that_differ_and_quotes_what_needs_it() -> None:
    assert view.cli_command(Scenario()) == "deepep-calc evaluate"
    assert view.cli_command(Scenario(model="deepseek-v3", nodes=4, cuda_graphs=True, slo_tok_s=40)) == (
        "deepep-calc evaluate --model deepseek-v3 --nodes 4 --cuda-graphs --slo-tok-s 40.0"
    )
    assert (
        view.cli_command(Scenario(calibration="my runs/p.toml"))
        == "deepep-calc evaluate --calibration 'my runs/p.toml'"
    )


def test_the_provenance_table_has_every_number_with_its_band_string() -> None:
    """The default scenario: 3 arms x (9 arm rows + 7 step parts + 5 memory parts, headroom being
    an arm row already) + 3 comparison rows = 66. DeepEP's per-user rate is the measured 19.62."""
    data = _result().to_json()
    rows = view.provenance_rows(data)
    assert len(rows) == 3 * (9 + 7 + 5) + 3
    first = rows[0]
    assert (first["where"], first["value"], first["unit"], first["tag"], first["band"]) == (
        "DeepEP (efa-proxy): per-user decode",
        "19.6",
        "tok/s",
        "measured",
        "",
    )
    replica = next(r for r in rows if r["where"] == "single-node replicas: aggregate throughput")
    assert replica["band"] == f"({view.band_range(data['arms']['replica']['aggregate_tok_s'], 1)})"


def test_band_strings_follow_the_arm_rows_and_the_comparison_rows() -> None:
    data = _result().to_json()
    bands = view.band_strings(data)
    assert set(bands["arms"]) == set(data["arms"])
    assert set(bands["arms"]["deepep"]) == {path for _, path, _ in view.ARM_ROWS}
    assert bands["arms"]["deepep"]["aggregate_tok_s"] == ""  # measured
    assert re.fullmatch(r"\(\d{3}\.\d–\d{3}\.\d\)", bands["arms"]["replica"]["aggregate_tok_s"])
    assert len(bands["compare"]) == len(view.COMPARE_ROWS) and bands["compared"] is None


def test_an_arms_label_is_its_head() -> None:
    data = _result().to_json()
    assert view.arm_label(data, "deepep") == arm_head("deepep", "efa-proxy", 2) == "DeepEP (efa-proxy)"


def test_which_route_is_host_proxied() -> None:
    routes = view.transport_initiation()
    assert routes["efa-proxy"] is True and routes["efa-gda"] is False and routes["ib-ibgda"] is False


def test_the_run_block_lines_fence_each_part_or_say_nothing_runs() -> None:
    lines = view.flag_lines(_result().verdict.flags)
    assert lines[0].startswith("# ") and lines[1].startswith("```") and lines[-1] == "```"
    parts = view.run_block_parts(_result().verdict.flags)
    assert sum(1 for line in lines if line.startswith("```") and line != "```") == len(parts) >= 1
    for part in parts:  # each part's caption, then its fence in its language, then its text
        at = lines.index(f"# {part['caption']}")
        assert lines[at + 1] == f"```{part['lang']}"
        assert lines[at + 2 : at + 2 + len(part["text"].splitlines())] == part["text"].splitlines()
    assert view.flag_lines(_result(model="kimi-k2", nodes=1).verdict.flags) == [
        "# nothing runs as asked: apply one of the changes in the headline and evaluate again"
    ]


def test_the_model_summary_tags_its_parameter_counts() -> None:
    """Qwen3-30B-A3B: about 30.5 B parameters, about 3 B active (the name's A3B)."""
    summary = view.model_summary(_result())
    assert summary["total_params_b"]["value"] == pytest.approx(30.5, abs=0.1)
    assert summary["active_params_b"]["value"] == pytest.approx(3.0, abs=0.1)
    assert summary["total_params_b"]["unit"] == "B params" and summary["total_params_b"]["tag"] == "derived"


def test_page_details_hold_no_command_line_for_an_uploaded_model() -> None:
    assert view.page_details(_result(), uploaded=True)["cli"] is None
    details = view.page_details(_result())
    assert details["cli"] == "deepep-calc evaluate" and details["disaggregated"] is None


def test_a_disaggregated_pages_figures_carry_their_bands() -> None:
    dv = view.page_details(_result(model="deepseek-v3", prefill_nodes=1, decode_nodes=3))["disaggregated"]
    assert all("band" in r for r in dv["figures"])
    ttft = next(r for r in dv["figures"] if r["label"] == "TTFT")
    assert ttft["band"] == view.band_range(ttft["q"], 0) != ""
    assert view._with_bands(None) is None


# the Jinja environment and script data ---------------------------------------------------------


def test_script_json_cannot_break_out_of_its_script_element() -> None:
    assert view.script_json({"a": "</script>&"}) == '{"a":"\\u003c/script\\u003e\\u0026"}'
    assert view.script_json("<b>") == "\\u003cb\\u003e"
    with pytest.raises(ValueError):
        view.script_json({"x": math.nan})  # NaN is not JSON


def test_the_templates_format_band_and_escape_like_the_rest() -> None:
    env = view.templates()
    q_json = {"value": 800.0, "unit": "tok/s", "low": 760.31, "high": 901.66}
    text = env.from_string("{{ 1234.5|fmt(1) }} {{ q|band(1) }} [{{ 'x'|unit }}] {{ '<b>' }}").render(
        q=q_json
    )
    assert text == "1,234.5 760.3–901.7 [] &lt;b&gt;"
    assert env.get_template("report.html") is not None and view.templates() is env


def test_the_page_layout_hands_the_scripts_the_same_rows_and_codes() -> None:
    layout = view.page_layout()
    assert layout["arm_rows"] is view.ARM_ROWS and layout["codes"] == VERDICTS_SHOWN
    assert layout["host_proxied"] == view.transport_initiation()
    assert view.plotly_js_path().is_file()
