"""(a) The kernel latency at which DeepEP ties the alternative (`whatif/breakeven/kernel.py`):
substituted back into the model it ties, and the shift it is solved with moves only the fixed
latency."""

from __future__ import annotations

import pytest

from deepep_calc.estimate.result import table_for
from deepep_calc.physics.deepep import KernelShape, KernelSite, kernel_us
from deepep_calc.question.scenario import Scenario
from deepep_calc.whatif.breakeven.kernel import kernel_shifted, kernel_tie

from .scenarios import GDA, IB, _per_layer_us, _r, _ratio


@pytest.mark.parametrize("scenario", [GDA, IB], ids=["efa-gda", "ib-ibgda"])
def test_kernel_latency_substituted_back_ties(scenario: Scenario) -> None:
    r = _r(scenario)
    answer = kernel_tie(r)
    assert answer.value is not None and answer.value.unit == "us"
    assert answer.value.tag is not None and answer.value.source
    shift = answer.value.scalar - _per_layer_us(r)
    shifted = kernel_shifted(r, shift)
    # the shifted model really runs its kernels at the answer's latency per layer ...
    assert _per_layer_us(r, shifted) == pytest.approx(answer.value.scalar, rel=1e-9)
    # ... and there DeepEP's aggregate equals the alternative's
    assert _ratio(r, shifted) == pytest.approx(1.0, abs=0.01)
    # a little faster wins, a little slower loses
    assert _ratio(r, kernel_shifted(r, shift - 5.0)) > 1.0 > _ratio(r, kernel_shifted(r, shift + 5.0))


def test_kernel_latency_never_ties_when_the_rest_of_the_step_decides() -> None:
    answer = kernel_tie(_r(Scenario()))  # the default scenario: the proxy and engine dominate
    assert answer.value is None
    assert "no fixed latency" in answer.note and "the rest of its step" in answer.note
    assert answer.check["floor_us"].scalar < answer.check["now_us"].scalar


def test_kernel_shift_moves_only_the_fixed_latency() -> None:
    r = _r(GDA)
    shape = KernelShape(16.0, 7168, 8, 256)
    base_k = table_for(r).kernel_constants(r.transport.name, r.instance.name)
    base = kernel_us(KernelSite(r.transport, r.instance, 8, 32, 8, 2), shape, base_k)["total"].scalar
    moved_k = kernel_shifted(r, 40.0).kernel_constants(r.transport.name, r.instance.name)
    moved = kernel_us(KernelSite(r.transport, r.instance, 8, 32, 8, 2), shape, moved_k)["total"].scalar
    assert moved - base == pytest.approx(40.0)


def test_the_shift_is_divided_by_the_instance_factor_across_nodes_only() -> None:
    """Across nodes the model charges the local fixed latency times the instance's factor (p5:
    1.51, from same-harness pairs against p5en), so a shift of 40 us per layer raises the fitted
    latency by 40 / 1.51; inside one node (NVLink) there is no factor and it rises by 40."""
    across = _r(Scenario(model="deepseek-v3", instance="p5", nodes=2))
    table = table_for(across)
    factor = table.instance_factor("p5").scalar
    assert factor == pytest.approx(1.513, abs=1e-3)
    library = across.transport.library
    before = table.nvlink_fit(library).alpha_us.scalar
    assert kernel_shifted(across, 40.0).nvlink_fit(library).alpha_us.scalar == pytest.approx(
        before + 40.0 / factor, rel=1e-12
    )
    inside = _r(Scenario(model="deepseek-v3", instance="p5", nodes=1))
    assert kernel_shifted(inside, 40.0).nvlink_fit(library).alpha_us.scalar == pytest.approx(
        before + 40.0, rel=1e-12
    )


def test_the_shift_touches_one_librarys_fit_and_starts_from_the_table_given() -> None:
    r = _r(GDA)
    base = table_for(r)
    shifted = kernel_shifted(r, 25.0)
    library = r.transport.library
    assert all(shifted.nvlink[k] is base.nvlink[k] for k in base.nvlink if k != library)
    assert shifted.transports is base.transports and shifted.engines is base.engines
    other = kernel_shifted(r, 0.0, table=shifted)  # a table handed in is the one shifted
    assert other.nvlink_fit(library).alpha_us.scalar == pytest.approx(
        shifted.nvlink_fit(library).alpha_us.scalar
    )


def test_no_tie_to_find_when_deepep_cannot_run() -> None:
    """Kimi K2 does not fit on one p5en node: there is no ratio to tie, and the answer says why."""
    answer = kernel_tie(_r(Scenario(model="kimi-k2", nodes=1)))
    assert answer.value is None and answer.short == "not applicable"
    assert answer.note == "No tie to find: DeepEP is not feasible here (it does not fit in HBM)."
