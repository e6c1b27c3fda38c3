"""estimate/bounds.py: what bounds an arm's step, as the faces read it, and the bands it carries.

The formulas are physics/bounds.py's (tests/physics/test_bounds.py); here, what this module adds:
the bound is read off the model's own step (also where a measured cell replaces the figure
shown), its parts add up to that step, each figure carries the band of its kind (the kernel
band for DeepEP's exchange across nodes, the step band otherwise, the wider one for a
combination no reference covers), a NIC is never busier than all the time, and a pass over
many rows names no single bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Q
from deepep_calc.estimate.bounds import _at_most_all
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import resolve


@pytest.fixture(scope="module")
def gda() -> object:
    """efa-gda on the calibration cluster: DeepEP modelled and uncovered, allgather covered."""
    return compute(resolve(Scenario(transport="efa-gda")))


def _factors(q: Q) -> tuple[float, float]:
    """(value / low, value / high): the band's factors (model / reference), as the table has them."""
    return q.scalar / float(q.low), q.scalar / float(q.high)


def test_the_parts_add_up_to_the_models_step(gda: object) -> None:
    for arm in gda.arms.values():
        b = arm.bounds
        assert sum(q.scalar for q in b.parts_ms.values()) == pytest.approx(b.step_ms.scalar, rel=1e-12)
        assert b.step_ms.scalar == pytest.approx(arm.model_step_ms.scalar, rel=1e-12)
        assert b.name in b.parts_ms and b.runner_up != b.name
        assert b.path in ("cpu", "gpu")


def test_at_a_measured_cell_the_bound_is_the_models_step_not_the_measurement() -> None:
    """The default scenario shows DeepEP's measured step (1000 / 19.62 = 50.97 ms); what bounds
    it is worked out on the model's own step, which differs."""
    dee = compute(resolve(Scenario())).arms["deepep"]
    assert dee.step_ms.scalar == pytest.approx(1000 / 19.62)
    assert dee.bounds.step_ms.scalar == pytest.approx(dee.model_step_ms.scalar, rel=1e-12)
    assert dee.bounds.step_ms.scalar != pytest.approx(dee.step_ms.scalar)


def test_deepeps_exchange_across_nodes_takes_the_kernel_band(gda: object) -> None:
    """DeepEP over efa-gda on 2 nodes: its exchange is banded by the kernels' own misses; the
    allgather exchange by the step's (covered: the near band); DeepEP's step, not covered by
    references, by the wider step band."""
    table = gda.table
    dee, alt = gda.arms["deepep"].bounds, gda.arms["allgather"].bounds
    assert _factors(dee.exchange_own_ms) == pytest.approx(table.band("kernel")[::-1])
    assert _factors(alt.exchange_own_ms) == pytest.approx(table.band("step")[::-1])
    assert _factors(dee.step_ms) == pytest.approx(table.band("step", covered=False)[::-1])
    assert _factors(alt.step_ms) == pytest.approx(table.band("step")[::-1])


def test_on_one_node_deepeps_exchange_takes_the_step_band() -> None:
    """One node: DeepEP rides NVLink, no kernel crosses a node, so the kernel band does not apply."""
    res = compute(resolve(Scenario(nodes=1, transport="nvlink")))
    b = res.arms["deepep"].bounds
    covered = res.arms["deepep"].evidence
    assert _factors(b.exchange_own_ms) == pytest.approx(res.table.band("step", covered=covered)[::-1])


def test_a_nic_is_never_busier_than_all_the_time() -> None:
    """A busy share of 90 % whose band reaches 150 % ends at 100 %; an unbanded share is left alone."""
    q = _at_most_all(Q.assumed(90.0, "%", "t").with_band(60.0, 150.0))
    assert (q.low, q.high) == (60.0, 100.0)
    plain = Q.assumed(90.0, "%", "t")
    assert _at_most_all(plain) is plain


def test_one_scenarios_bounds_in_json_and_none_for_a_pass_over_many_rows() -> None:
    """One scenario's arm adds `bound`, `exchange_bound` and the NIC's shares; under CUDA graphs no
    launch work hides anything (`hidden_ms` None). A sweep's block names no single bound: its
    bounds go to the sweep's columns, its JSON adds nothing, and no take-over load is solved."""
    doc = compute(resolve(Scenario(cuda_graphs=True))).arms["deepep"].bounds.to_json()
    assert set(doc) == {"bound", "exchange_bound", "nic_busy_pct", "nic_busy_exchange_pct"}
    assert doc["bound"]["hidden_ms"] is None
    assert sum(q["value"] for q in doc["bound"]["parts_ms"].values()) == pytest.approx(
        doc["bound"]["step_ms"]["value"]
    )
    swept = compute(resolve(Scenario()).vary(concurrency=np.array([8.0, 32.0]))).arms["deepep"].bounds
    assert swept.many and swept.to_json() == {} and swept.take_over is None
