"""The fit stage as a whole (`fit/build.py`): kernel references and serving observations into
one table, and the built-in table, read from the shipped file or refitted under other
assumptions. Each stage's arithmetic is pinned in `test_kernels.py` and `test_engines.py`."""

from __future__ import annotations

import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.catalog.transports import load_transports
from deepep_calc.fit.build import built_in_table, fit_kernels, fit_table
from deepep_calc.fit.evidence import covered_keys
from deepep_calc.fit.kernels import kernel_rows
from deepep_calc.fit.observations import observations
from deepep_calc.fit.table import Table

ROWS = kernel_rows()


@pytest.fixture(scope="module")
def kernels_only() -> Table:
    return fit_kernels(ROWS)


def close(a: float, b: float) -> bool:
    return a == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_the_kernel_stage_of_every_reference_is_the_shipped_kernel_fit(kernels_only: Table) -> None:
    """The shipped file is this fit (then the engine stages): each transport's four constants
    and signal ratio, each library's NVLink constants, the instance factors, the leaving costs."""
    shipped = built_in_table()
    assert set(kernels_only.transports) == set(load_transports())
    for name, fit in kernels_only.transports.items():
        ship = shipped.transports[name]
        for field in ("leaving_dispatch_us", "leaving_combine_us", "beta_dispatch_us", "beta_combine_us"):
            assert close(getattr(fit, field).scalar, getattr(ship, field).scalar), (name, field)
        assert (
            close(fit.signal_ratio.scalar, ship.signal_ratio.scalar)
            and fit.reference_lanes == ship.reference_lanes
        )
    for lib, nvl in kernels_only.nvlink.items():
        assert close(nvl.alpha_us.scalar, shipped.nvlink[lib].alpha_us.scalar), lib
    assert {k: round(v.scalar, 9) for k, v in kernels_only.instance_factors.items()} == {
        k: round(v.scalar, 9) for k, v in shipped.instance_factors.items()
    }
    assert set(kernels_only.leaving) == {"efa", "ib"}


def test_the_kernel_stage_leaves_the_engine_constants_to_the_next(kernels_only: Table) -> None:
    """Before the engine stages run, the hardware constants are the fallback (assumed) and
    nothing is covered."""
    assert (
        kernels_only.kernel_floor_us.tag is Tag.ASSUMED
        and "no fit yet" in kernels_only.kernel_floor_us.source
    )
    assert kernels_only.expert_efficiency.tag is Tag.ASSUMED
    assert kernels_only.covered == frozenset()


def test_a_transport_whose_references_are_all_left_out_takes_its_class() -> None:
    """Without efa-pplx's rows its cost per message is the median of the other EFA host-proxy
    transports' (assumed), and the fit still holds every transport."""
    table = fit_kernels([r for r in ROWS if r.transport.name != "efa-pplx"])
    fit = table.transports["efa-pplx"]
    assert fit.beta_dispatch_us.tag is Tag.ASSUMED
    assert (
        "no reference of efa-pplx in this fit: median of its class (efa, host-proxy)"
        in fit.beta_dispatch_us.source
    )
    assert set(table.transports) == set(load_transports())


def test_the_whole_fit_covers_what_its_observations_cover() -> None:
    """Fitted on the TRT-LLM cells alone, the table covers exactly their combinations."""
    obs = [o for o in observations() if o.engine == "trtllm"]
    table = fit_table(ROWS, obs)
    assert table.covered == covered_keys(obs)
    assert all(key.startswith("trtllm/") for key in table.covered)


def test_the_built_in_table_is_read_once() -> None:
    assert built_in_table() is built_in_table(CATALOG)
    assert built_in_table().assumptions == CATALOG


def test_other_assumptions_refit_the_table_and_keep_the_shipped_bands() -> None:
    """An HBM efficiency of 0.4 (the catalog says 0.8): a fresh fit under it (cached per value),
    which says what it was fitted under and carries the shipped bands (the cross-validation is
    not rerun)."""
    slower = CATALOG.with_values({"hbm_efficiency": 0.4})
    table = built_in_table(slower)
    assert table is built_in_table(slower)
    assert table.assumptions == slower and table is not built_in_table()
    assert table.bands == built_in_table().bands
    assert table.kernel_floor_us.scalar != built_in_table().kernel_floor_us.scalar


def test_the_fit_is_redone_under_other_assumptions() -> None:
    """A slower HBM leaves more of each graph-mode step to the fitted per-kernel floor: the
    table is refitted (and cached apart, on the assumptions value) and says what it was fitted
    under; the shipped one is still the catalog's."""
    base = built_in_table()
    slow = CATALOG.changed(hbm_efficiency=0.6)
    refit = built_in_table(slow)
    assert refit is not base
    assert refit.assumptions == slow and base.assumptions == CATALOG
    assert refit.kernel_floor_us.scalar != pytest.approx(base.kernel_floor_us.scalar)
    assert built_in_table(CATALOG.changed(hbm_efficiency=0.6)) is refit
    assert built_in_table() is base
