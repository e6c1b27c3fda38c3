"""`Resolved` carries everything a what-if needs: the in-memory models, the loaded profile and
whether measured cells may stand in (`measured`); `change` re-resolves a few fields with them,
`vary` turns numeric fields into arrays and is never measured."""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.estimate.compute import compute
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.question.scenario import Scenario, VariedScenario, resolve


def test_an_in_memory_model_is_named_by_its_key_and_carried() -> None:
    spec = resolve_model("qwen3-30b-a3b")
    r = resolve(Scenario(model="upload:abc", nodes=1), {"upload:abc": spec})
    assert r.model is spec and r.models == {"upload:abc": spec}
    assert r.change(concurrency=64).model is spec


def test_without_its_models_an_upload_key_is_refused() -> None:
    with pytest.raises(InputError):
        resolve(Scenario(model="upload:abc"))


def test_change_checks_the_changed_fields_and_keeps_the_rest() -> None:
    r = resolve(Scenario(model="deepseek-v3", nodes=2))
    changed = r.change(nodes=4)
    assert (changed.scenario.nodes, changed.scenario.model) == (4, "deepseek-v3")
    assert r.scenario.nodes == 2  # the original is untouched
    with pytest.raises(InputError, match="--nodes"):
        r.change(nodes=0)


def test_change_keeps_a_loaded_profile_unless_calibration_changes() -> None:
    from dataclasses import replace

    marker = object()
    r = replace(resolve(Scenario()), profile=marker)
    assert r.change(concurrency=8).profile is marker
    assert r.change(calibration=None).profile is None


def test_vary_is_never_measured_and_holds_arrays() -> None:
    r = resolve(Scenario())
    assert r.measured
    v = r.vary(concurrency=np.array([4, 8]))
    assert not v.measured and isinstance(v.scenario, VariedScenario)
    assert list(v.scenario.concurrency) == [4.0, 8.0]
    # a varied scenario copies without the scalar checks an array would fail
    assert list(v.scenario.copy(isl=np.array([64.0, 128.0])).isl) == [64.0, 128.0]
    # and measured cells never stand in for its rows, though they do for the scenario itself
    assert compute(r).arms["deepep"].measured_cell is not None
    res = compute(r.vary(concurrency=float(r.scenario.concurrency)))
    assert resolve(Scenario()).measured and all(arm.measured_cell is None for arm in res.arms.values())


def test_vary_refuses_a_field_that_is_not_numeric() -> None:
    with pytest.raises(InputError, match="model"):
        resolve(Scenario()).vary(model=np.array([1]))
