"""A verdict's words and advice (`whatif/explanation.py`: `explain_verdict`): worked out once, the
fixes only when the status asks, and a robustness line that says what the flip search found.

The scenarios were picked by evaluating them: `FRAGILE` (DeepSeek-V3 on 4x p5en over efa-gda,
eager, 512 requests) is dense and CUDA graphs flip it; `CLOSE` is robust to every single change
yet within the model's error band; the default is robust and not close; DeepSeek-V3 on one p5
does not fit.
"""

from __future__ import annotations

from deepep_calc import Scenario, evaluate
from deepep_calc.decide.answer import decide_resolved
from deepep_calc.question.scenario import resolve
from deepep_calc.whatif.explanation import explain_verdict
from deepep_calc.whatif.fixes import fixes_for
from deepep_calc.whatif.flip import flip_advisory

ROBUST = "robust: no single change of transport, comms, graphs, concurrency or nodes flips it"
FRAGILE = Scenario(model="deepseek-v3", nodes=4, concurrency=512, transport="efa-gda")
CLOSE = Scenario(model="deepseek-v3", cuda_graphs=True)
NOTHING_FITS = Scenario(model="deepseek-v3", instance="p5", nodes=1)


def test_the_words_are_worked_out_once_on_the_results_own_verdict() -> None:
    result = decide_resolved(resolve(Scenario()))
    v = result.verdict
    assert not v.explained and v.headline == "" and v.robustness == ""
    assert explain_verdict(result) is v
    assert v.explained and v.headline and v.reasons and v.flags["launch"]
    v.headline = "kept"  # a second call returns the verdict as it stands, working nothing out
    assert explain_verdict(result) is v and v.headline == "kept"


def test_a_fragile_verdict_names_the_flip_it_quotes_as_its_last_advisory() -> None:
    result = evaluate(FRAGILE)
    v = result.verdict
    assert v.status == "ok" and v.code == "dense"
    last = v.advisories[-1]
    assert last == flip_advisory(result, v.code)
    assert last.startswith("--cuda-graphs would flip the verdict to ▲ deepep")
    assert v.robustness == "fragile: --cuda-graphs alone flips it (the last advisory)."


def test_a_robust_verdict_says_so_and_adds_the_error_band_only_on_a_close_call() -> None:
    plain = evaluate(Scenario()).verdict
    assert not plain.close_call and plain.robustness == ROBUST
    close = evaluate(CLOSE).verdict
    assert close.close_call
    assert close.robustness == ROBUST + ", though the call itself is within the model's error band (headline)"
    assert not any(" would flip" in a for a in plain.advisories + close.advisories)


def test_nothing_fits_runs_no_flip_search_and_offers_the_fixes() -> None:
    """With nothing to flip the line is "untested"; the fixes are `fixes_for`'s, as JSON."""
    result = evaluate(NOTHING_FITS)
    v = result.verdict
    assert v.status == "nothing_fits"
    assert v.robustness == "untested: nothing fits as asked"
    assert not any(" would flip" in a for a in v.advisories)
    assert v.fixes and v.fixes == [f.to_json() for f in fixes_for(result, "nothing_fits")]


def test_an_ok_verdict_has_no_fixes_and_only_a_split_gets_the_disaggregated_block() -> None:
    aggregated = evaluate(Scenario()).verdict
    assert aggregated.fixes == [] and "disaggregated" not in aggregated.flags
    split = evaluate(Scenario(prefill_nodes=1, decode_nodes=1)).verdict
    assert split.status == "ok" and split.fixes == []
    assert split.flags["disaggregated"]  # both servers' and the router's blocks
    assert split.disaggregation is not None and aggregated.disaggregation is None
