"""estimate/result.py: what `compute` returns, and two arms compared like with like.

`like_with_like` and `comparison` are worked on hand-made figures (stand-ins with only the
attributes they read): measured on both arms or modelled on both, never one of each. `versus`,
the JSON of an arm and of a result, and `table_for` are read off real results.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import both_covered, comparison, like_with_like, table_for
from deepep_calc.fit.build import built_in_table
from deepep_calc.question.scenario import resolve


def _arm(aggregate: float, per_user: float, step: float, measured: bool) -> SimpleNamespace:
    """An arm with model figures, and (measured) observations shown in their place."""
    model = {
        "model_aggregate_tok_s": Q.assumed(aggregate, "tok/s", "model"),
        "model_per_user_tok_s": Q.assumed(per_user, "tok/s", "model"),
        "model_step_ms": Q.assumed(step, "ms", "model"),
    }
    if measured:  # a cell's figures, 10 % below the model's
        shown = {
            "aggregate_tok_s": Q.measured(aggregate * 0.9, "tok/s", "cell"),
            "per_user_tok_s": Q.measured(per_user * 0.9, "tok/s", "cell"),
            "step_ms": Q.measured(step / 0.9, "ms", "cell"),
        }
    else:  # the model's figures are the ones shown (the same objects, as `model_arm` keeps them)
        shown = {
            "aggregate_tok_s": model["model_aggregate_tok_s"],
            "per_user_tok_s": model["model_per_user_tok_s"],
            "step_ms": model["model_step_ms"],
        }
    return SimpleNamespace(**model, **shown)


def test_like_with_like_takes_measurements_only_when_both_arms_have_one() -> None:
    both = _arm(600.0, 20.0, 50.0, True), _arm(800.0, 25.0, 40.0, True)
    a, b, measured = like_with_like(*both, "aggregate_tok_s")
    assert measured and (a.scalar, b.scalar) == (pytest.approx(540.0), pytest.approx(720.0))
    one = _arm(600.0, 20.0, 50.0, True), _arm(800.0, 25.0, 40.0, False)
    a, b, measured = like_with_like(*one, "aggregate_tok_s")
    assert not measured and (a.scalar, b.scalar) == (600.0, 800.0)  # the measured one set aside
    a, b, measured = like_with_like(*one, "step_ms")
    assert not measured and (a.scalar, b.scalar) == (50.0, 40.0)
    a, b, _ = like_with_like(*both, "per_user_tok_s")
    assert (a.tag, b.tag) == (Tag.MEASURED, Tag.MEASURED)


def test_like_with_like_falls_back_to_the_shown_figure_without_a_model_one() -> None:
    """An arm with no model figure recorded (None) compares on the figure it shows."""
    a = SimpleNamespace(aggregate_tok_s=Q.assumed(5.0, "tok/s", "x"), model_aggregate_tok_s=None)
    b = SimpleNamespace(aggregate_tok_s=Q.assumed(4.0, "tok/s", "y"), model_aggregate_tok_s=None)
    qa, qb, measured = like_with_like(a, b, "aggregate_tok_s")
    assert qa is a.aggregate_tok_s and qb is b.aggregate_tok_s and not measured


def test_comparison_is_ratio_ratio_and_tax_on_one_footing() -> None:
    """Model figures 600 / 800 tok/s aggregate = 0.75x, 20 / 25 tok/s per user = 0.8x, steps
    50 - 40 = +10 ms/token; measured on both (each 10 % lower, steps / 0.9): 0.75x, 0.8x and
    55.6 - 44.4 = 11.1 ms/token, and the aggregates are said to be measured."""
    ratio, per_user, tax, measured = comparison(_arm(600.0, 20.0, 50.0, False), _arm(800.0, 25.0, 40.0, True))
    assert (ratio.scalar, per_user.scalar, tax.scalar) == (pytest.approx(0.75), pytest.approx(0.8), 10.0)
    assert (ratio.unit, per_user.unit, tax.unit) == ("x", "x", "ms/token") and not measured
    assert ratio.source == "aggregate tok/s DeepEP / alternative (model figures of both arms)"
    assert tax.source == "DeepEP step - alternative step (model figures of both arms)"
    ratio, per_user, tax, measured = comparison(
        _arm(600.0, 20.0, 50.0, True), _arm(800.0, 25.0, 40.0, True), "deepep", "replica"
    )
    assert measured and tax.scalar == pytest.approx(50.0 / 0.9 - 40.0 / 0.9)
    assert ratio.scalar == pytest.approx(0.75) and ratio.tag is Tag.DERIVED
    assert ratio.source == "aggregate tok/s DeepEP / replica (measured on both arms)"


def test_both_covered_is_and_for_flags_and_per_row_for_arrays() -> None:
    assert both_covered(True, True) is True and both_covered(True, False) is False
    rows = both_covered(np.array([True, True, False]), np.array([True, False, True]))
    assert rows.tolist() == [True, False, False]


def test_versus_gives_the_results_own_pair_and_computes_any_other_once() -> None:
    """DeepEP against the alternative is the result's own ratio, per-user ratio and tax; DeepEP
    against the replicas is computed from the model figures (neither measured), banded, and kept:
    a second call returns the very same tuple."""
    res = compute(resolve(Scenario(model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True)))
    own = res.versus("deepep", "allgather")
    assert own[:3] == (res.ratio_deepep_vs_alternative, res.ratio_per_user, res.tax_ms_per_token)
    assert own[0] is res.ratio_deepep_vs_alternative and own[3] is False
    pair = res.versus("deepep", "replica")
    assert res.versus("deepep", "replica") is pair
    dee, rep = res.arms["deepep"], res.arms["replica"]
    assert pair[0].scalar == pytest.approx(
        dee.model_aggregate_tok_s.scalar / rep.model_aggregate_tok_s.scalar
    )
    assert pair[0].banded and pair[1].banded and pair[3] is False
    assert pair[2].scalar == pytest.approx(dee.model_step_ms.scalar - rep.model_step_ms.scalar)


def test_an_arms_json_has_its_memory_its_layout_and_its_bounds() -> None:
    """A replica names its one-node layout; DeepEP (no layout of its own) has no such key. One
    scenario's arm carries its step's bound; the memory parts are each a quantity in GB."""
    res = compute(resolve(Scenario(model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True)))
    rep, dee = res.arms["replica"].to_json(), res.arms["deepep"].to_json()
    assert rep["layout"] == "replica:tp" and "layout" not in dee
    assert set(dee["memory_detail_gb"]) == {"weights", "kv_cache", "buffers", "reserve", "usable", "headroom"}
    assert all(q["unit"] == "GB" for q in dee["memory_detail_gb"].values())
    assert {"bound", "exchange_bound", "nic_busy_pct"} <= set(dee)
    assert dee["evidence_covered"] is False and dee["measured_cell"] is None
    assert dee["model_step_ms"]["value"] == dee["step_ms"]["value"]  # modelled: the same figure


def test_a_results_json_names_the_resolved_scenario() -> None:
    """The scenario as asked, plus what resolving it fixed: GPUs per node, the model's name and
    weight dtype; no verdict before one is attached, no disaggregated deployment."""
    res = compute(resolve(Scenario()))
    doc = res.to_json()
    s = doc["scenario"]
    assert (s["gpus_per_node"], s["model_resolved"], s["weight_dtype"]) == (8, "qwen3-30b-a3b-fp8", "fp8")
    assert doc["verdict"] is None and doc["disaggregated"] is None and doc["notes"] == []
    assert doc["ratio_deepep_vs_alternative"]["value"] == pytest.approx(545.04 / 794.56)


def test_table_for_is_the_built_in_fit_without_a_profile() -> None:
    r = resolve(Scenario())
    assert table_for(r) is built_in_table(r.assumptions)
