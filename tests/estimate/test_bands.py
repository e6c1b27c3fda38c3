"""estimate/bands.py: the band a modelled figure carries, from its kind's out-of-sample misses.

Worked on a stand-in table with round factors: model / reference fell within (0.8, 1.5) where
references cover the combination and within (0.5, 2.0) where none does. A figure of 100 then
lies in 100 / 1.5 .. 100 / 0.8 = 66.7 .. 125 (covered) or 50 .. 200 (not); a figure that is
the inverse of the banded kind swaps and inverts the factors: 100 x 0.8 .. 100 x 1.5 = 80 .. 150.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.estimate.bands import banded

NEAR, FAR = (0.8, 1.5), (0.5, 2.0)


def _table(near: Any = NEAR, far: Any = FAR) -> Any:
    """A table whose only band is the kind `step`: `near` where covered, `far` where not."""
    return SimpleNamespace(
        band=lambda kind, covered=True: None if kind != "step" else (near if covered else far)
    )


def _q(value: Any = 100.0) -> Q:
    return Q.assumed(value, "ms", "model")


def test_a_covered_figure_takes_the_near_band() -> None:
    q = banded(_q(), _table(), "step")
    assert (q.value, q.tag) == (100.0, Tag.ASSUMED)
    assert (q.low, q.high) == (pytest.approx(100 / 1.5), pytest.approx(125.0))


def test_an_uncovered_figure_takes_the_wider_band() -> None:
    q = banded(_q(), _table(), "step", covered=False)
    assert (q.low, q.high) == (pytest.approx(50.0), pytest.approx(200.0))


def test_an_inverse_figure_swaps_and_inverts_the_factors() -> None:
    """A per-user rate is 1000 / step: a step the model overestimates by 1.5x is a rate it
    underestimates by the same factor, so the rate's truth lies at 0.8x .. 1.5x of it."""
    q = banded(_q(), _table(), "step", inverse=True)
    assert (q.low, q.high) == (pytest.approx(80.0), pytest.approx(150.0))
    q = banded(_q(), _table(), "step", inverse=True, covered=False)
    assert (q.low, q.high) == (pytest.approx(50.0), pytest.approx(200.0))  # 1/2 .. 1/0.5: symmetric


def test_coverage_may_differ_row_by_row() -> None:
    q = banded(_q(np.array([100.0, 100.0])), _table(), "step", covered=np.array([True, False]))
    assert np.allclose(q.low, [100 / 1.5, 50.0]) and np.allclose(q.high, [125.0, 200.0])


def test_measured_figures_and_kinds_without_a_band_are_returned_as_they_are() -> None:
    measured = Q.measured(100.0, "ms", "a run")
    assert banded(measured, _table(), "step") is measured
    plain = _q()
    assert banded(plain, _table(), "ttft") is plain  # no band recorded for this kind


def test_without_a_wider_band_an_uncovered_figure_keeps_the_near_one() -> None:
    q = banded(_q(), _table(far=None), "step", covered=False)
    assert (q.low, q.high) == (pytest.approx(100 / 1.5), pytest.approx(125.0))
