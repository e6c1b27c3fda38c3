"""estimate/passes.py: the model over many values of a field at once, and the first crossing.

`first_true` is checked against the answer a scan of every integer gives (the predicates are
thresholds, so the smallest integer where each holds is known before the call); `model` against
what it promises: arrays in, arrays out, and no measured substitution at a measured cell.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Tag
from deepep_calc.estimate.passes import first_true, model
from deepep_calc.estimate.result import table_for
from deepep_calc.question.scenario import resolve


@pytest.mark.parametrize("points", [6, 96])
def test_first_true_finds_every_threshold_exactly(points: int) -> None:
    """For `g >= t` the answer is t, wherever t falls in [1, 500] (at the ends too), whether the
    grid is coarse (6 points a pass) or the default 96."""
    for t in range(1, 501):
        assert first_true(lambda g, t=t: g >= t, 1, 500, points) == t


def test_first_true_is_exact_on_a_coarse_grid_too() -> None:
    """Four points a pass still leave a point inside each bracket, so the search narrows."""
    assert first_true(lambda g: g >= 2, 1, 500, 4) == 2
    assert all(first_true(lambda g, t=t: g >= t, 1, 500, 2) == t for t in (1, 2, 77, 499, 500))


def test_first_true_on_a_large_range() -> None:
    assert first_true(lambda g: g >= 123_457, 1, 10_000_000) == 123_457
    assert first_true(lambda g: g * g >= 10**9, 1, 10**6) == 31_623  # ceil(sqrt(1e9)) = 31,622.8 -> 31,623


def test_first_true_is_none_where_the_predicate_never_holds() -> None:
    assert first_true(lambda g: g > 500, 1, 500) is None
    assert first_true(lambda g: np.zeros_like(g, dtype=bool), 7, 7) is None


def test_first_true_of_a_predicate_already_true_at_the_start_is_the_start() -> None:
    assert first_true(lambda g: g >= 0, 17, 900) == 17
    assert first_true(lambda g: g >= 5, 5, 5) == 5  # a one-point range


def test_first_true_returns_the_first_crossing_the_grid_sees() -> None:
    """A predicate true only on [40, 60]: the first pass (about 48 points from 1 to 1,000, every
    ~21 apart) lands inside the window, and the narrowing passes find its start, 40."""
    assert first_true(lambda g: (g >= 40) & (g <= 60), 1, 1000) == 40


def test_model_is_vectorised_and_never_takes_a_measured_cell() -> None:
    """At the default scenario `evaluate` prints the calibration cell's 545.04 tok/s, measured;
    the vectorised model at the same point gives its own figure, tagged assumed, as an array."""
    r = resolve(Scenario())
    one = model(r)
    dee = one.arms["deepep"]
    assert np.shape(dee.aggregate_tok_s.value) == (1,) and dee.aggregate_tok_s.tag is Tag.ASSUMED
    assert dee.measured_cell is None and float(dee.aggregate_tok_s.value[0]) != 545.04
    many = model(r, concurrency=[8, 32, 128], isl=[120, 120, 2048])
    assert np.shape(many.arms["allgather"].step_ms.value) == (3,)
    assert float(many.arms["deepep"].aggregate_tok_s.value[1]) == pytest.approx(
        float(dee.aggregate_tok_s.value[0]), rel=1e-12
    )  # row 1 is the default point again


def test_model_runs_with_the_table_handed_in() -> None:
    r = resolve(Scenario())
    table = table_for(r)
    assert model(r, table).table is table
