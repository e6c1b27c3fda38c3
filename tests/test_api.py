"""api.py: `evaluate`, the Python API's one call: a scenario in, its answer out.

A scenario, keyword fields, or both (the fields then change the scenario); the words and advice
worked out unless `explain=False`; a model known only in memory by the key `model` names; a
refusal is a `CalcError` naming its field. The JSON it feeds is pinned by test_public_api.py.
"""

from __future__ import annotations

import pytest

import deepep_calc
from deepep_calc import Scenario
from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.io.hf_config import resolve_model


def test_no_argument_is_the_default_scenario() -> None:
    """The calibration A/B: dense, allgather, both arms at their measured cell."""
    result = evaluate()
    assert result.scenario == Scenario()
    assert (result.verdict.code, result.verdict.recommended_arm) == ("dense", "allgather")
    assert result.arms["deepep"].measured_cell == result.arms["allgather"].measured_cell == "trt-ab-k8-c32"
    assert deepep_calc.evaluate is evaluate  # the package's own name for it


def test_fields_make_a_scenario_or_change_the_one_given() -> None:
    """Concurrency 4 with EP_NUM_COMMS 1 is the trt-ab-k1-c4 cell, whether the fields are given
    alone or on top of a scenario (where they win over the scenario's own)."""
    alone = evaluate(concurrency=4, comms=1)
    over = evaluate(Scenario(concurrency=4, comms=8), comms=1)
    for result in (alone, over):
        assert (result.scenario.concurrency, result.scenario.comms) == (4, 1)
        assert result.arms["deepep"].measured_cell == "trt-ab-k1-c4"
    given = Scenario(nodes=4)
    assert evaluate(given).scenario is given  # no field: the scenario as it is


def test_the_scenario_is_positional_only() -> None:
    """`scenario=` would read as a field of a new scenario, which has none of that name."""
    with pytest.raises(TypeError, match="scenario"):
        evaluate(scenario=Scenario())


def test_explain_false_leaves_the_words_for_later() -> None:
    """Without the words the rule's fields are there, the headline is not, and the JSON refuses
    rather than print a verdict without them; by default both are worked out."""
    quick = evaluate(explain=False)
    assert quick.verdict.code == "dense" and not quick.verdict.explained and quick.verdict.headline == ""
    with pytest.raises(RuntimeError, match="explain_verdict"):
        quick.to_json()
    full = evaluate()
    assert full.verdict.explained and full.verdict.headline.startswith("Run allgather")
    assert full.to_json()["verdict"]["headline"] == full.verdict.headline


def test_a_model_known_only_in_memory_is_found_by_its_key() -> None:
    """An uploaded config.json identical to the calibrated preset, under a key no catalog knows:
    found through `models`, it is the preset's twin and keeps its measured cell; without
    `models` the key is refused, naming --model."""
    spec = resolve_model("qwen3-30b-a3b-fp8")
    result = evaluate(model="upload-1", models={"upload-1": spec}, explain=False)
    assert result.model is spec
    assert result.arms["deepep"].measured_cell == "trt-ab-k8-c32"
    with pytest.raises(InputError) as info:
        evaluate(model="upload-1")
    assert info.value.field == "--model"


def test_refusals_are_calc_errors_with_a_field() -> None:
    for kw in ({"transport": "nvlink"}, {"experts": 100}, {"isl": 10**6}):
        with pytest.raises(CalcError) as info:
            evaluate(Scenario(**kw))
        assert info.value.field
