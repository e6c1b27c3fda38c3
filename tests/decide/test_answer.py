"""decide/answer.py: the rule applied to one scenario, before any words.

`decide_resolved` refuses a layout no arm can split, computes every arm and attaches the
verdict's fields (never its words: those wait for `explain_verdict`); `decide` picks the
deciding comparison and calls a close call only where that comparison rests on the model and
its band spans the threshold; `note_assumed_mode` adds its note once.
"""

from __future__ import annotations

import copy

import pytest

from deepep_calc import Scenario
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q
from deepep_calc.decide.answer import decide, decide_resolved, note_assumed_mode
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import resolve


def test_decide_resolved_attaches_the_rules_fields_and_no_words() -> None:
    """The default scenario: dense, allgather, decided on the measured pair (0.69x misses 1.05x)."""
    result = decide_resolved(resolve(Scenario()))
    v = result.verdict
    assert (v.code, v.recommended_arm, v.status, v.close_call) == ("dense", "allgather", "ok", False)
    assert v.deciding.arms == ("deepep", "allgather") and v.deciding.basis == "measured"
    assert (v.deciding.threshold, v.deciding.status) == (1.05, "misses")
    assert v.contending == {"deepep": True, "allgather": True, "replica": True}
    assert not v.explained and v.headline == "" and v.reasons == []
    with pytest.raises(RuntimeError, match="explain_verdict"):
        v.to_json()  # the words are not worked out: the JSON refuses rather than print blanks


def test_decide_resolved_refuses_a_layout_no_arm_can_split() -> None:
    with pytest.raises(InputError) as info:
        decide_resolved(resolve(Scenario(experts=100)))
    assert info.value.field == "--experts"


def test_decide_resolved_adds_the_disaggregated_deployment_when_asked() -> None:
    asked = decide_resolved(resolve(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=1)))
    assert asked.disaggregated is not None and asked.disaggregated.label == "1P1D"
    assert decide_resolved(resolve(Scenario())).disaggregated is None


def test_a_modelled_comparison_whose_band_spans_the_threshold_is_a_close_call() -> None:
    """efa-gda: DeepEP modelled, its ratio's band (about 0.93-1.96x around 1.00) spans 1.05: a close
    call, the code unchanged. The same result with the band removed is a plain dense call."""
    result = compute(resolve(Scenario(transport="efa-gda")))
    v = decide(result)
    assert (v.code, v.close_call, v.deciding.basis, v.deciding.status) == (
        "dense",
        True,
        "model",
        "within the band",
    )
    plain = copy.copy(result)
    q = result.ratio_deepep_vs_alternative
    plain.ratio_deepep_vs_alternative = Q(q.value, q.unit, q.tag, q.source)
    v = decide(plain)
    assert (v.code, v.close_call, v.deciding.status) == ("dense", False, "misses")


def test_a_measured_comparison_is_never_a_close_call() -> None:
    """Both aggregates measured: even a band put on the ratio by hand cannot make it close."""
    result = compute(resolve(Scenario()))
    banded = copy.copy(result)
    banded.ratio_deepep_vs_alternative = result.ratio_deepep_vs_alternative.with_band(0.5, 1.5)
    v = decide(banded)
    assert v.deciding.basis == "measured" and v.deciding.status == "within the band" and not v.close_call


def test_capacity_compares_the_ep_flavours_at_threshold_one() -> None:
    """Kimi-K2 on 2x p5en: one node cannot hold it (replicas out), so the faster EP flavour wins,
    compared at 1.00x rather than 1 + noise."""
    v = decide(compute(resolve(Scenario(model="kimi-k2"))))
    assert v.code == "capacity" and v.deciding.arms == ("deepep", "allgather") and v.deciding.threshold == 1.0
    assert v.contending["replica"] is False


def test_nothing_fits_has_no_deciding_comparison() -> None:
    v = decide(compute(resolve(Scenario(model="deepseek-v3", instance="p5", nodes=1))))
    assert (v.code, v.recommended_arm, v.status) == ("capacity", "none", "nothing_fits")
    assert v.deciding is None and not v.close_call and not any(v.contending.values())


def test_an_unset_graph_mode_is_noted_once() -> None:
    result = decide_resolved(resolve(Scenario()))
    note_assumed_mode(result)
    note_assumed_mode(result)
    assert result.notes == [
        "Decode mode not given: eager assumed (the calibration cells ran eager); "
        "pass --cuda-graphs if you serve with CUDA graphs."
    ]
    graphs = note_assumed_mode(decide_resolved(resolve(Scenario(cuda_graphs=True))))
    assert graphs.notes == []
