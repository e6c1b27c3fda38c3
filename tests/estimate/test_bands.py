"""estimate/bands.py: the band a modelled figure carries, from its kind's out-of-sample misses.

Worked on a stand-in table with round factors: model / reference fell within (0.8, 1.5) where
references cover the combination and within (0.5, 2.0) where none does. A figure of 100 then
lies in 100 / 1.5 .. 100 / 0.8 = 66.7 .. 125 (covered) or 50 .. 200 (not); a figure that is
the inverse of the banded kind swaps and inverts the factors: 100 x 0.8 .. 100 x 1.5 = 80 .. 150.
Then through `evaluate`: every modelled figure of an arm (DeepSeek-V3 on 4 nodes, no measured
cell) carries its band around its value, and a figure far from every reference the built-in
table's wider band.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
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


def test_modelled_figures_carry_bands_and_measured_ones_none() -> None:
    r = evaluate(Scenario(model="deepseek-v3", nodes=4))
    for arm in r.arms.values():
        for q in (arm.per_user_tok_s, arm.step_ms, arm.aggregate_tok_s, arm.ttft_ms):
            assert q.banded and q.low <= q.scalar <= q.high
    ratio = r.ratio_deepep_vs_alternative
    assert ratio.banded and ratio.low < ratio.scalar < ratio.high
    cal = evaluate(Scenario())
    assert not cal.arms["deepep"].per_user_tok_s.banded  # measured
    assert not cal.ratio_deepep_vs_alternative.banded  # a ratio of two measurements


def test_a_figure_far_from_every_reference_carries_the_wider_band() -> None:
    """DeepSeek-V3 on SGLang under CUDA graphs: no reference covers SGLang with DeepSeek, nor
    SGLang in graph mode with DeepEP across nodes, so its arms take the leave-a-combination-out
    bands; the default scenario keeps the narrower ones."""
    from deepep_calc import Scenario, evaluate
    from deepep_calc.fit.build import built_in_table

    table = built_in_table()
    far = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True))
    near = evaluate(Scenario(model="qwen3-30b-a3b-fp8", nodes=2, concurrency=64))
    assert not far.arms["deepep"].evidence and near.arms["deepep"].evidence
    for result, covered in ((far, False), (near, True)):
        step = result.arms["deepep"].step_ms
        lo, hi = table.band("step", covered=covered)
        assert step.low == pytest.approx(step.scalar / hi) and step.high == pytest.approx(step.scalar / lo)
    assert table.band("step", covered=False)[1] > table.band("step")[1]
