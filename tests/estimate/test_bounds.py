"""estimate/bounds.py: what bounds an arm's step, as the faces read it, and the bands it carries.

The formulas are physics/bounds.py's (tests/physics/test_bounds.py); here, what this module adds:
the bound is read off the model's own step (also where a measured cell replaces the figure
shown), its parts add up to that step, each figure carries the band of its kind (the kernel
band for DeepEP's exchange across nodes, the step band otherwise, the wider one for a
combination no reference covers), a NIC is never busier than all the time, and a pass over
many rows names no single bound. Then every arm's bounds in `Result.to_json()` (valid against
the API's schema) for the scenarios every face must state (`tests/report/bound_cases.py`), and
the NIC busy figure at the default scenario against the measured ~2.2 % with its band: the
model lands below it (about 1.1 % of the exchange's time, 0.8-1.25 %), and that is reported,
not tuned; the strict xfail turns red the day the two meet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.catalog.measured import load_facts
from deepep_calc.estimate.bounds import _at_most_all
from deepep_calc.estimate.compute import compute
from deepep_calc.physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from deepep_calc.question.scenario import resolve
from deepep_calc.web.schemas import EvaluateResponse
from report.bound_cases import CASES


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


@pytest.mark.parametrize(
    "fields", CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "calibration"
)
def test_every_arm_says_what_bounds_it_in_the_json(fields: dict) -> None:
    data = evaluate(Scenario(**fields)).to_json()
    EvaluateResponse.model_validate(data)  # the API's published contract
    for name, arm in data["arms"].items():
        b = arm["bound"]
        assert b["name"] in BOUNDS and b["label"]
        assert b["path"] in ("cpu", "gpu")
        assert math.isclose(
            sum(q["value"] for q in b["parts_ms"].values()), b["step_ms"]["value"], rel_tol=1e-9
        )
        assert b["part_ms"]["value"] <= b["step_ms"]["value"] * (1 + 1e-12)
        for q in (b["part_ms"], b["step_ms"], arm["nic_busy_pct"], arm["nic_busy_exchange_pct"]):
            assert q["tag"] in ("derived", "assumed") and "low" in q and "high" in q, name
        assert arm["exchange_bound"]["name"] in EXCHANGE_BOUNDS
        assert 0.0 <= arm["nic_busy_pct"]["value"] <= arm["nic_busy_exchange_pct"]["value"] <= 100.0
        assert arm["nic_busy_exchange_pct"]["high"] <= 100.0
        over = b["takes_over"]
        if over is not None:
            assert over["name"] != b["name"] and over["factor"]["value"] > 1.0
        assert arm["breakdown_ms"].keys() == {
            "engine",
            "hbm",
            "compute",
            "kernels",
            "moe_comm",
            "prefill",
            "proxy",
        }


NIC_MEASURED_PCT = load_facts()["nic_utilisation"].q().value * 100.0


def test_nic_busy_at_the_calibration_scenario_is_what_the_model_counts() -> None:
    """2x p5en, Qwen3-30B, efa-proxy, concurrency 32: 4.6 MB a step over 8.7 ms of exchange at
    50 GB/s per GPU is 1.07 % (kernel band 0.82-1.25 %); over the 51.4 ms step 0.18 %. The
    measured figure (~2.2 %, method not published) lies above the band: reported, not tuned."""
    dee = evaluate(Scenario()).arms["deepep"].bounds
    ex, step = dee.nic_busy_exchange_pct, dee.nic_busy_pct
    assert ex.scalar == pytest.approx(1.07, abs=0.01) and step.scalar == pytest.approx(0.18, abs=0.005)
    assert ex.low < ex.scalar < ex.high and step.low < step.scalar < step.high
    assert ex.high < NIC_MEASURED_PCT  # the miss, stated: the band stops short of 2.2 %


@pytest.mark.xfail(
    strict=True,
    reason="the model counts 1.07 % (0.82-1.25 %) of the exchange's time against ~2.2 % measured "
    "(method not published): docs/model.md, 'What bounds the step'",
)
def test_nic_busy_at_the_calibration_scenario_lands_on_the_measured_2_2_pct() -> None:
    dee = evaluate(Scenario()).arms["deepep"].bounds
    q = dee.nic_busy_exchange_pct
    assert q.low <= NIC_MEASURED_PCT <= q.high
