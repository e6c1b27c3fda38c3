"""estimate/cells.py at the default scenario's cells: the calibration A/B's three cells print
their measurements exactly, tagged measured, and what is computed from them derived."""

from __future__ import annotations

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Tag

from .shared import CALIBRATION_FIELDS as CAL


@pytest.mark.parametrize(
    ("conc", "isl", "agg_deepep", "agg_dense"),
    [(4, 120, 68.7, 105.66), (32, 120, 545.04, 794.56), (16, 2048, 284.22, 424.67)],
)
def test_headline_cells_exact(conc: int, isl: int, agg_deepep: float, agg_dense: float) -> None:
    r = evaluate(Scenario(**CAL, concurrency=conc, isl=isl, osl=128))
    dee, alt = r.arms["deepep"], r.arms["allgather"]
    assert dee.per_user_tok_s.scalar == 19.62 and dee.per_user_tok_s.tag is Tag.MEASURED
    assert alt.per_user_tok_s.scalar == 27.57 and alt.per_user_tok_s.tag is Tag.MEASURED
    assert round(dee.per_user_tok_s.scalar, 1) == 19.6 and round(alt.per_user_tok_s.scalar, 1) == 27.6
    assert dee.aggregate_tok_s.scalar == agg_deepep and dee.aggregate_tok_s.tag is Tag.MEASURED
    assert alt.aggregate_tok_s.scalar == agg_dense and alt.aggregate_tok_s.tag is Tag.MEASURED
    assert r.tax_ms_per_token.tag is Tag.DERIVED
    assert r.tax_ms_per_token.scalar == pytest.approx(1000 / 19.62 - 1000 / 27.57)
    assert round(r.tax_ms_per_token.scalar, 1) == 14.7
    assert r.ratio_deepep_vs_alternative.scalar == pytest.approx(agg_deepep / agg_dense)
    assert r.ratio_deepep_vs_alternative.tag is Tag.DERIVED
    assert r.verdict.code == "dense"


def test_measured_aggregate_ratios_as_published() -> None:
    ratios = [
        round(evaluate(Scenario(**CAL, concurrency=c, isl=i)).ratio_deepep_vs_alternative.scalar, 2)
        for c, i in ((4, 120), (32, 120), (16, 2048))
    ]
    assert ratios == [0.65, 0.69, 0.67]


def test_single_comm_raw_pair() -> None:
    r = evaluate(Scenario(**{**CAL, "comms": 1}, concurrency=4, isl=120, osl=128))
    assert r.arms["deepep"].step_ms.scalar == 51.90
    assert r.arms["allgather"].step_ms.scalar == 35.64
    assert r.tax_ms_per_token.scalar == pytest.approx(16.26)
    assert r.arms["deepep"].ttft_ms.tag is Tag.MEASURED
