"""The verdict around one scenario: which two inputs the page's map spans, and the grid it gets."""

from __future__ import annotations

import numpy as np

from deepep_calc import Scenario, evaluate
from deepep_calc.question.fields import LIMITS
from deepep_calc.whatif.neighbourhood import AXES, axis_values, neighbourhood


def test_the_first_pair_of_axes_that_changes_the_verdict_is_kept() -> None:
    around = neighbourhood(evaluate(Scenario()))
    assert not around.uniform
    assert len(set(around.codes.reshape(-1).tolist())) >= 2
    assert around.codes.shape == around.rec.shape == (len(around.ys), len(around.xs))
    assert (around.y_field, around.x_field) in AXES


def test_one_verdict_everywhere_keeps_the_first_pair_and_says_so() -> None:
    around = neighbourhood(evaluate(Scenario(model="kimi-k2")))
    assert around.uniform
    assert (around.y_field, around.x_field) == AXES[0]
    assert set(around.codes.reshape(-1).tolist()) == {"capacity"}


def test_comms_is_an_axis_only_where_the_transport_reads_it() -> None:
    result = evaluate(Scenario(transport="efa-gda"))
    assert not result.resolved.transport.comms_sensitive
    around = neighbourhood(result)
    assert "comms" not in (around.y_field, around.x_field)


def test_an_axis_holds_the_scenarios_own_value_within_the_limits_and_the_cap() -> None:
    values = axis_values("concurrency", 48)
    assert 48 in values and values.max() <= LIMITS["concurrency"] and values.min() >= 1
    assert np.all(np.diff(values) > 0)
    capped = axis_values("isl", 1000, cap=4096.0)
    assert capped.max() <= 4096 and 1000 in capped
