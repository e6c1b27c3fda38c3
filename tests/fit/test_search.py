"""The one-dimensional searches the fit stages share (`fit/search.py`), on functions whose
minimum is known: golden-section search of a unimodal function, and a grid first where it is
not unimodal."""

from __future__ import annotations

import math

import pytest

from deepep_calc.fit.search import golden, grid_then_golden


def two_valleys(x: float) -> float:
    """A broad valley at 3 (lowest 0.2) and a narrow, deeper one at 9.3 (lowest −1)."""
    return min(0.1 * abs(x - 3.0) + 0.2, 10.0 * abs(x - 9.3) - 1.0)


def test_golden_finds_the_minimum_of_a_unimodal_function() -> None:
    """|x − 3| on [0, 10]: 80 iterations shrink the bracket to 10 × 0.618^80 ~ 2e-16."""
    assert golden(lambda x: abs(x - 3.0), 0.0, 10.0) == pytest.approx(3.0, abs=1e-12)
    assert golden(lambda x: (x - 0.25) ** 2, -1.0, 1.0) == pytest.approx(0.25, abs=1e-7)


def test_golden_stops_at_the_edge_when_the_minimum_lies_beyond_it() -> None:
    """|x + 1| on [0, 10] falls towards 0: the answer is the bracket's lower end."""
    assert golden(lambda x: abs(x + 1.0), 0.0, 10.0) == pytest.approx(0.0, abs=1e-12)


def test_each_iteration_keeps_the_golden_share_of_the_bracket() -> None:
    """No iteration: the middle of [0, 10], 5. One: the points 10 − 6.18 = 3.82 and 6.18; |x − 3|
    is lower at 3.82, so [0, 6.1803...] remains, whose middle is 5 × (√5 − 1) / 2 = 3.0902."""
    f = lambda x: abs(x - 3.0)  # noqa: E731
    assert golden(f, 0.0, 10.0, iterations=0) == 5.0
    assert golden(f, 0.0, 10.0, iterations=1) == pytest.approx(5.0 * (math.sqrt(5.0) - 1.0) / 2.0, rel=1e-15)


def test_a_grid_first_finds_the_deeper_of_two_valleys() -> None:
    """Golden search alone follows the broad valley to 3; the 81-point grid (step 0.125) lands
    at 9.25 (−0.5), and the search between its neighbours 9.125 and 9.375 finds 9.3."""
    assert golden(two_valleys, 0.0, 10.0) == pytest.approx(3.0, abs=1e-9)
    assert grid_then_golden(two_valleys, 0.0, 10.0) == pytest.approx(9.3, abs=1e-9)


def test_a_grid_minimum_at_an_end_searches_the_one_neighbour() -> None:
    """x on [2, 6]: the grid's best is the first point, 2, searched between 2 and 2.05."""
    assert grid_then_golden(lambda x: x, 2.0, 6.0) == pytest.approx(2.0, abs=1e-12)
