"""decide/headline.py: the one sentence a verdict leads with, worded from the figures it compared.

Direct: the tie clause of a dense call (DeepEP ahead by less than the noise band "goes against
DeepEP"), the step beside the ratio, what nothing-fits and missed targets say, an arm in the
possessive. No catalog scenario measures DeepEP ahead of the alternative by less than the noise
band, so the measured tie is worked on a verdict built by hand over the default scenario's
result: 820 vs 800 tok/s, both measured, a ratio of 1.025 between 1 and the 1.05 threshold.
Then, through `evaluate`: a negative tax reads as a saving, one node names NVLink, and the close
calls a band across the threshold makes (issue 10), on results re-decided on a copy.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.decide.answer import decide
from deepep_calc.decide.headline import headline, step_clause, whose
from deepep_calc.decide.verdict import Comparison, Deciding, Verdict
from deepep_calc.report.markdown import render_markdown
from deepep_calc.whatif.explanation import explain_verdict

GDA_GRAPHS = Scenario(
    model="deepseek-v3",
    nodes=2,
    engine="vllm",
    cuda_graphs=True,
    transport="efa-gda",
    concurrency=1024,
    isl=128,
    osl=1024,
)  # GPU-initiated EFA under CUDA graphs at DeepSeek scale and a large batch: DeepEP's step is
# the shorter against allgather, and it beats the one-node replicas (TP8), short of KV cache


@pytest.fixture(scope="module")
def calibration() -> Any:
    """The default scenario's result (2x p5en, efa-proxy, allgather), words not worked out."""
    return evaluate(Scenario(), explain=False)


ALL_RUN = {"deepep": True, "allgather": True, "replica": True}


def _measured_tie(tax_ms: float) -> Verdict:
    """A dense verdict whose deciding comparison is DeepEP against allgather, both measured:
    820 vs 800 tok/s, a ratio of 1.025 (derived), below the 1.05 threshold; the replicas lost."""
    dee, alt = Q.measured(820.0, "tok/s", "run"), Q.measured(800.0, "tok/s", "run")
    ratio = (dee / alt).as_("x", "aggregate tok/s DeepEP / allgather (measured on both arms)")
    per_user = Q.derived(1.01, "x", "per-user ratio")
    tax = Q.derived(tax_ms, "ms/token", "DeepEP step - allgather step")
    compared = Comparison("measured", {"deepep": dee, "allgather": alt}, ratio, per_user, tax, 1.05)
    deciding = Deciding(
        ("deepep", "allgather"),
        "measured",
        {"deepep": dee, "allgather": alt},
        ratio,
        per_user,
        tax,
        1.05,
        "misses",
    )
    return Verdict("dense", "allgather", compared=compared, deciding=deciding, contending=ALL_RUN)


def test_a_measured_lead_inside_the_noise_band_is_a_tie_that_goes_against_deepep(calibration: Any) -> None:
    """1.025 is above 1 yet below 1 + 5 %: the headline says DeepEP is ahead and why it is not
    recommended. With a longer step beside the higher aggregate the step clause says what carries
    it; with a shorter one, what it saves."""
    longer = headline(calibration, _measured_tie(2.0), ALL_RUN, [], [])
    assert longer == (
        "Run allgather: DeepEP over efa-proxy reaches 1.02× [derived] its aggregate "
        "(820.0 vs 800.0 tok/s [measured]), despite a decode step 2.0 ms/token [derived] longer: time "
        "to first token and batch size carry the aggregate; within the 5% noise band that is a tie, "
        "and ties go against DeepEP."
    )
    shorter = headline(calibration, _measured_tie(-1.5), ALL_RUN, [], ["Caveat: a test caveat."])
    assert shorter == (
        "Run allgather: DeepEP over efa-proxy reaches 1.02× [derived] its aggregate "
        "(820.0 vs 800.0 tok/s [measured]) and saves 1.5 ms/token [derived]; within the 5% noise "
        "band that is a tie, and ties go against DeepEP. Caveat: a test caveat."
    )


def test_a_ratio_at_or_below_one_is_no_tie(calibration: Any) -> None:
    """At exactly 1.00 DeepEP is not ahead: nothing to call a tie."""
    v = _measured_tie(0.0)
    even = Q.measured(800.0, "tok/s", "run")
    v.compared.aggregate["deepep"] = even
    v.compared.ratio = Q.derived(1.0, "x", "even")
    v.deciding = None
    text = headline(calibration, v, ALL_RUN, [], [])
    assert text == (
        "Run allgather: DeepEP over efa-proxy reaches 1.00× [derived] its aggregate "
        "(800.0 vs 800.0 tok/s [measured])."
    )


def test_a_lead_inside_the_band_over_the_rival_that_decided_is_a_tie_too(calibration: Any) -> None:
    """DeepEP clears allgather but not the replicas (1.02x theirs, modelled), and the replicas do
    not clear allgather: allgather is recommended, and the deciding comparison, DeepEP against
    the replicas, is quoted with the same tie clause."""
    v = _measured_tie(2.0)
    dee, rep = Q.assumed(1020.0, "tok/s", "model"), Q.assumed(1000.0, "tok/s", "model")
    ratio = Q.assumed(1.02, "x", "DeepEP / replica")
    tax = Q.assumed(-0.5, "ms/token", "DeepEP step - replica step")
    v.deciding = Deciding(
        ("deepep", "replica"), "model", {"deepep": dee, "replica": rep}, ratio, ratio, tax, 1.05, "misses"
    )
    assert headline(calibration, v, ALL_RUN, [], []) == (
        "Run allgather: DeepEP over efa-proxy reaches 1.02× [assumed] the single-node replicas' "
        "aggregate (1,020.0 vs 1,000.0 tok/s [assumed]), the rival it has to beat and saves "
        "0.5 ms/token [assumed]; within the 5% noise band that is a tie, and ties go against DeepEP."
    )


@pytest.mark.parametrize(
    ("ratio", "tax", "clause"),
    [
        (0.7, 0.0, ""),  # no difference in the step: nothing to say
        (1.2, 0.0, ""),
        (0.7, 14.7, " and pays a tax of 14.7 ms/token [assumed]"),
        (1.3, -3.0, " and saves 3.0 ms/token [assumed]"),
    ],
)
def test_step_clause_words(ratio: float, tax: float, clause: str) -> None:
    assert step_clause(Q.assumed(ratio, "x", "t"), Q.assumed(tax, "ms/token", "t")) == clause


def test_whose_puts_an_arm_in_the_possessive() -> None:
    assert whose("replica") == "the single-node replicas'"
    assert whose("allgather") == "the allgather arm's"
    assert whose("tp") == "the tensor parallel arm's"


def test_nothing_fits_names_the_leanest_arm_and_the_smallest_change() -> None:
    """DeepSeek-V3 on one p5 node: no arm's weights fit in its HBM. The headline quotes the
    leanest arm's need against what is usable, then the first fix and up to two more."""
    result = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=1), explain=False)
    v = result.verdict
    assert v.status == "nothing_fits"
    lean = min(result.arms, key=lambda n: result.arms[n].memory_gb_per_gpu.scalar)
    need = result.arms[lean].memory_gb_per_gpu.scalar
    fixes = [
        SimpleNamespace(change=c, note=f"note {i}")
        for i, c in enumerate(("--nodes 2", "--instance p5en", "--isl 64", "--osl 8"))
    ]
    text = headline(result, v, v.contending, fixes, [])
    assert text.startswith("Nothing fits on 1× p5 at concurrency 32 (ISL 120 / OSL 128): no arm fits in HBM")
    assert f"needs {need:,.0f} GB per GPU against" in text
    assert text.endswith(
        "Smallest change that fits: --nodes 2 (then note 0); also --instance p5en, --isl 64."
    )
    none = headline(result, v, v.contending, [], [])
    assert none.endswith("No single change the tool searched fits (the advisories say what was tried).")


def test_missed_targets_lead_with_the_nearest_figure_and_what_would_meet_them() -> None:
    """A 1,000 tok/s per-user floor no arm reaches: the fastest arm's figure is quoted, then the
    sentence of the verdict itself; with one target the fix "meets it"."""
    result = evaluate(Scenario(slo_tok_s=1000), explain=False)
    v = result.verdict
    assert v.status == "targets_missed"
    text = headline(result, v, v.contending, [], [])
    assert text.startswith("No arm meets the 1000 tok/s per-user floor (fastest: ")
    assert "No single change the tool searched meets it (the advisories say what was tried). Run " in text


# Through evaluate (issue 10): the saving, one node, close calls -------------------------------------


def test_a_negative_tax_reads_as_a_saving_everywhere() -> None:
    result = evaluate(GDA_GRAPHS)
    assert result.tax_ms_per_token.scalar < 0
    v = result.verdict
    assert not re.search(r"(?<![\w-])-\d", v.headline)
    assert "saves" in v.headline or v.close_call  # a close call words the band, not the step
    assert any("DeepEP saves" in line for line in v.reasons)
    md = render_markdown(result)
    rows = [line for line in md.splitlines() if "per token" in line and line.startswith("|")]
    # the report words the comparison that decided (here against the replicas) as a saving, and
    # no row prints a negative number
    assert rows and all(row.startswith("| DeepEP saving per token") for row in rows)
    assert all("-" not in row.split("|")[2] for row in rows)


@pytest.mark.parametrize(
    ("ratio", "tax", "needle"),
    [
        (0.7, 14.7, "pays a tax of 14.7"),
        (1.3, -3.0, "saves 3.0"),
        (1.2, 2.0, "despite"),
        (0.9, -1.0, "although"),
    ],
)
def test_step_clause_never_sets_a_ratio_against_a_contradicting_tax(
    ratio: float, tax: float, needle: str
) -> None:
    text = step_clause(Q.assumed(ratio, "x", "t"), Q.assumed(tax, "ms/token", "t"))
    assert needle in text and "-" not in text


@pytest.mark.parametrize(
    "fields",
    [
        {"engine": "vllm", "cuda_graphs": True, "concurrency": 64, "alternative": "tp"},  # close call
        {"concurrency": 32},  # a dense call
        {"instance": "p5"},  # nothing fits one p5 node
    ],
    ids=["close", "dense", "nothing-fits"],
)
def test_one_node_names_nvlink_not_the_configured_transport(
    capsys: pytest.CaptureFixture[str], fields: dict[str, Any]
) -> None:
    """On one node DeepEP's exchange rides NVLink and the model charges no EFA path: a headline,
    card or report that named efa-proxy (the default transport) would describe a path not taken."""
    s = Scenario(model="deepseek-v3", nodes=1, **fields)
    result = evaluate(s)
    assert s.transport == "efa-proxy" and "efa-proxy" not in result.verdict.headline
    if result.verdict.status == "ok":
        assert "DeepEP over NVLink" in result.verdict.headline
    assert "DeepEP over NVLink" in render_markdown(result)
    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in fields.items()]
    code, out, _ = run_cli(capsys, "evaluate", "--model", "deepseek-v3", "--nodes", "1", *flags)
    assert code == 0 and "efa-proxy" not in out.split("Why")[0] and "DeepEP over NVLink" in out
    assert "EP_NUM_COMMS" not in out.split("Why")[0]  # no proxy lanes on one node
    two = evaluate(Scenario(model="deepseek-v3", nodes=2, **fields)).verdict.headline
    assert "DeepEP over efa-proxy" in two  # across nodes the transport is named


def _explained(result: Any) -> Any:
    """`result` decided again and explained (the verdict a face shows), on a copy."""
    out = copy.copy(result)
    out.verdict = decide(out)
    return explain_verdict(out)


def _with_band(result: Any, low: float, high: float) -> Any:
    """The result with the band [low, high] on its DeepEP / alternative ratio and, where the
    replicas are a separate rival, on the DeepEP / replicas ratio too (either may decide)."""
    out = copy.copy(result)
    out.ratio_deepep_vs_alternative = result.ratio_deepep_vs_alternative.with_band(low, high)
    out._versus = {}
    if result.alternative != "replica" and "replica" in result.arms:
        ratio, ratio_pu, tax, measured = result.versus("deepep", "replica")
        out._versus[("deepep", "replica")] = (ratio.with_band(low, high), ratio_pu, tax, measured)
    return out


def test_a_band_across_the_threshold_makes_the_headline_say_too_close() -> None:
    base = evaluate(Scenario(transport="efa-gda"))  # modelled both arms, ratio 0.94
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, ratio - 0.1, ratio + 0.15))
    assert v.close_call and v.code == base.verdict.code == "dense"
    assert v.headline.startswith("Too close to call, likely allgather")
    assert "band" in v.headline and "1.05× threshold" in v.headline


def _unbanded(result: Any) -> Any:
    """The result with no band on its ratio (evaluate() attaches the shipped bands)."""
    out = copy.copy(result)
    q = result.ratio_deepep_vs_alternative
    out.ratio_deepep_vs_alternative = type(q)(q.value, q.unit, q.tag, q.source)
    return out


def _unbanded_pair(result: Any) -> Any:
    """The result with no band on any ratio it compares (its DeepEP / replicas one included)."""
    out = _unbanded(result)
    out._versus = {}
    out.table = replace(result.table, bands={})
    return out


def test_a_band_clear_of_the_threshold_changes_nothing() -> None:
    base = _unbanded(evaluate(Scenario(transport="efa-gda")))
    plain = _explained(base)
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, ratio - 0.05, ratio + 0.03))  # the threshold is 1.05
    assert not v.close_call and v.headline == plain.headline and v.code == plain.code


def test_no_band_is_exactly_the_rule_without_bands() -> None:
    base = _unbanded(evaluate(Scenario(transport="efa-gda")))
    once, again = _explained(base), _explained(base)
    assert once.to_json() == again.to_json() and not once.close_call
    assert once.headline.startswith("Run allgather")


def test_evaluate_attaches_the_shipped_band_and_says_too_close() -> None:
    """With the cross-validated ratio band (0.83-1.19x around 1.00) the call is too close."""
    v = evaluate(Scenario(transport="efa-gda")).verdict
    assert v.close_call and v.headline.startswith("Too close to call, likely allgather")


def test_a_deepep_win_inside_its_band_is_likely_deepep() -> None:
    base = evaluate(GDA_GRAPHS)
    assert base.verdict.code == "deepep"
    v = _explained(_with_band(base, 0.9, 2.2))
    assert v.close_call and v.code == "deepep" and v.headline.startswith("Too close to call, likely DeepEP")


def test_a_band_is_ignored_where_both_arms_are_measured() -> None:
    base = evaluate(Scenario())
    v = _explained(_with_band(base, 0.5, 1.5))
    assert not v.close_call and v.headline == base.verdict.headline


def test_a_capacity_call_inside_its_band_says_either_ep_flavour() -> None:
    """Under capacity the faster EP flavour wins (threshold 1): a band across 1 is a close call."""
    base = evaluate(Scenario(model="kimi-k2"))
    assert base.verdict.code == "capacity" and base.verdict.compared.basis == "model"
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, min(ratio, 1.0) - 0.1, max(ratio, 1.0) + 0.1))
    assert v.close_call and v.code == "capacity" and v.recommended_arm == base.verdict.recommended_arm
    assert "Either EP flavour, too close to call" in v.headline and "spans 1.00×" in v.headline
    clear = _explained(_with_band(base, ratio * 0.99, ratio * 1.01)) if abs(ratio - 1) > 0.02 else None
    assert clear is None or (not clear.close_call and "too close" not in clear.headline)


def test_replicas_over_a_higher_deepep_figure_say_it_is_a_tie() -> None:
    """Replicas recommended while DeepEP's aggregate is (slightly) higher: the headline says why."""
    scenario = Scenario(
        model="deepseek-v3", nodes=4, transport="efa-gda", engine="vllm", cuda_graphs=True, concurrency=136
    )
    result = evaluate(scenario)
    v = result.verdict
    agg = v.compared.aggregate
    assert v.recommended_arm == "replica"  # the scenario's premise; re-pick one if the model moves
    assert agg["replica"].scalar < agg["deepep"].scalar < agg["replica"].scalar * v.compared.threshold
    # the comparison that decided is DeepEP against the replicas: its band spans the threshold
    assert v.deciding is not None and v.deciding.arms == ("deepep", "replica")
    assert v.close_call and v.headline.startswith("Too close to call, likely single-node replicas")
    plain = _explained(_unbanded_pair(result))  # without the band the tie is said in words
    assert not plain.close_call and "within the 5% noise band, a tie" in plain.headline
    calib = evaluate(Scenario(nodes=1000)).verdict
    assert calib.recommended_arm == "replica" and "a tie" not in calib.headline


@pytest.mark.parametrize(
    "fields",
    [
        # robust to every single change, yet inside the model's error: both must be said
        {"model": "kimi-k2", "instance": "p6-b300", "nodes": 4, "engine": "sglang", "transport": "efa-gda",
         "concurrency": 256, "isl": 4096, "osl": 512},
        # robust and clear
        {"model": "qwen3-30b-a3b-fp8", "nodes": 2, "engine": "trtllm", "transport": "efa-proxy",
         "concurrency": 256},
    ],
)  # fmt: skip
def test_a_robust_line_never_sounds_surer_than_the_headline(fields: dict[str, Any]) -> None:
    v = evaluate(Scenario(**fields)).verdict
    assert v.robustness.startswith("robust"), v.robustness  # the scenarios are chosen robust
    assert ("error band" in v.robustness) == v.close_call
    assert ("too close to call" in v.headline.lower()) == v.close_call
