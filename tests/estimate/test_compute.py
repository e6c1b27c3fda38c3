"""estimate/compute.py: every arm of a scenario and their comparison, without the verdict.

Pinned directly: the arms computed, the DeepEP / alternative ratio and its band (the near band
where references cover both arms' combinations, the wider one otherwise; none between two
measurements), the reuse of the non-DeepEP arms for a knob only DeepEP reads, and the table
a caller hands in (with the assumptions it was fitted under, which no other evaluation running
beside it sees). Then the model's own figures near the default scenario (the substitution
aside): flat across load. That the fit does not reproduce the measured steps by construction is
`tests/fit/test_engines.py`'s.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.constants import CATALOG, Assumptions
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import table_for
from deepep_calc.fit.build import built_in_table
from deepep_calc.question.scenario import resolve

from .shared import CALIBRATION_FIELDS as CAL


def test_compute_returns_every_arm_and_no_verdict() -> None:
    res = compute(resolve(Scenario(alternative="tp")))
    assert list(res.arms) == ["deepep", "tp", "replica"] and res.alternative == "tp"
    assert res.verdict is None and res.disaggregated is None
    assert {name: arm.name for name, arm in res.arms.items()} == {n: n for n in res.arms}


def test_the_ratio_is_the_model_aggregates_with_the_band_of_their_coverage() -> None:
    """efa-gda on the calibration cluster: DeepEP is modelled (no cell) and its combination is not
    covered by references, so the ratio of the two model aggregates takes the wider ratio band:
    value / high .. value / low of the table's uncovered (low, high)."""
    r = resolve(Scenario(transport="efa-gda"))
    res = compute(r)
    dee, alt = res.arms["deepep"], res.arms["allgather"]
    assert dee.evidence is False and alt.evidence is True
    ratio = dee.model_aggregate_tok_s.scalar / alt.model_aggregate_tok_s.scalar
    q = res.ratio_deepep_vs_alternative
    assert q.scalar == pytest.approx(ratio, rel=1e-12) and q.tag is Tag.ASSUMED
    lo, hi = res.table.band("ratio", covered=False)
    assert (q.low, q.high) == (pytest.approx(ratio / hi, rel=1e-12), pytest.approx(ratio / lo, rel=1e-12))
    per_user = dee.model_per_user_tok_s.scalar / alt.model_per_user_tok_s.scalar
    assert res.ratio_per_user.scalar == pytest.approx(per_user, rel=1e-12) and res.ratio_per_user.banded
    assert res.tax_ms_per_token.scalar == pytest.approx(dee.model_step_ms.scalar - alt.model_step_ms.scalar)


def test_covered_arms_take_the_narrower_band_and_two_measurements_none() -> None:
    """Qwen3-30B at concurrency 33 (no cell): both arms' combinations are covered, so the ratio
    carries the near band. At the default scenario both aggregates are measured: a ratio of two
    observations is not modelled and carries no band."""
    res = compute(resolve(Scenario(concurrency=33)))
    assert res.arms["deepep"].evidence is True and res.arms["allgather"].evidence is True
    q = res.ratio_deepep_vs_alternative
    lo, hi = res.table.band("ratio")
    assert (q.low, q.high) == (pytest.approx(q.scalar / hi), pytest.approx(q.scalar / lo))
    measured = compute(resolve(Scenario()))
    assert not measured.ratio_deepep_vs_alternative.banded
    assert measured.ratio_deepep_vs_alternative.tag is Tag.DERIVED


def test_reuse_keeps_the_arms_that_do_not_read_a_deepep_knob() -> None:
    """EP_NUM_COMMS is read by DeepEP alone: `reuse` hands the other arms over unchanged (the
    same objects) and recomputes DeepEP, through the reused memo."""
    base = compute(resolve(Scenario()))
    other = compute(resolve(Scenario(comms=4)), reuse=base)
    assert other.arms["allgather"] is base.arms["allgather"] and other.arms["replica"] is base.arms["replica"]
    assert other.arms["deepep"] is not base.arms["deepep"] and other.memo is base.memo
    assert other.arms["deepep"].measured_cell is None  # comms 4 is no cell: DeepEP is modelled
    fresh = compute(resolve(Scenario(comms=4)))
    assert other.arms["deepep"].model_step_ms.scalar == pytest.approx(
        fresh.arms["deepep"].model_step_ms.scalar
    )


def test_a_table_handed_in_is_the_one_the_arms_run_with() -> None:
    r = resolve(Scenario())
    table = table_for(r)
    assert compute(r, table=table).table is table


def test_values_may_be_arrays() -> None:
    """A vectorised pass: one row per concurrency, the arms' figures arrays of that length."""
    res = compute(resolve(Scenario()).vary(concurrency=np.array([8.0, 32.0, 128.0])))
    assert np.shape(res.arms["deepep"].aggregate_tok_s.value) == (3,)
    assert np.shape(res.ratio_deepep_vs_alternative.value) == (3,)


# The model's own figures near the default scenario --------------------------------------------


def test_model_prediction_near_the_default_scenario_stays_flat() -> None:
    """Without the measured substitution the model lands within 4 % of the flat lines at every
    regime (concurrency 32, ISL 2048): the step is a fixed cost, as measured."""
    for conc, isl in ((32, 120), (16, 2048)):
        res = compute(resolve(Scenario(**CAL, concurrency=conc, isl=isl)).vary(concurrency=[conc]))
        assert float(res.arms["deepep"].per_user_tok_s.value[0]) == pytest.approx(19.62, rel=0.04)
        assert float(res.arms["allgather"].per_user_tok_s.value[0]) == pytest.approx(27.57, rel=0.04)
        assert res.arms["deepep"].per_user_tok_s.tag is Tag.ASSUMED


def test_compute_runs_under_the_tables_assumptions() -> None:
    """`compute(r, table=...)` evaluates the question under the assumptions its table was fitted
    under: the same answer as a question resolved under them, and its transport's changed
    figure is the one the arms see."""
    key = "transport:efa-gda:wire_efficiency"
    low = CATALOG.with_values({key: 0.3})
    s = Scenario(model="deepseek-v3", nodes=2, transport="efa-gda", concurrency=64, isl=4096)
    table = built_in_table(low)
    via_table = compute(resolve(s), table=table)
    direct = compute(resolve(s, assumptions=low))
    assert via_table.resolved.assumptions == low
    assert via_table.resolved.transport.wire_efficiency == 0.3
    assert via_table.arms["deepep"].step_ms.scalar == direct.arms["deepep"].step_ms.scalar
    assert via_table.arms["deepep"].step_ms.scalar != compute(resolve(s)).arms["deepep"].step_ms.scalar


def test_a_what_if_does_not_leak_into_another_evaluation() -> None:
    """Two threads evaluate the same question, one under a changed constant: each gets the
    figures it would get alone (no state is shared between them)."""
    scenario = Scenario(model="deepseek-v3", nodes=2)
    slow = CATALOG.changed(hbm_efficiency=0.55)

    def step_ms(assumptions: Assumptions) -> float:
        r = resolve(scenario, assumptions=assumptions)
        return compute(r, table=built_in_table(assumptions)).arms["deepep"].step_ms.scalar

    alone = {"self": step_ms(slow), "other": step_ms(CATALOG)}
    assert alone["self"] != pytest.approx(alone["other"])
    seen: dict[str, float] = {}
    inside = threading.Event()
    done = threading.Event()

    def other() -> None:
        inside.wait(5)
        seen["other"] = step_ms(CATALOG)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    r = resolve(scenario, assumptions=slow)
    inside.set()
    done.wait(5)
    seen["self"] = compute(r, table=built_in_table(slow)).arms["deepep"].step_ms.scalar
    t.join(5)
    assert seen == alone
