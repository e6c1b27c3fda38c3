"""The built-in constants table: kernel references and serving observations, fitted once.

`fit_table(rows, obs)` is the whole fit stage (kernels, then engines in stages); the
cross-validation calls it on subsets. `built_in_table(assumptions)` caches the full fit per
value of the assumed constants (the sensitivity tornado refits under each). Under the
catalog's own (`CATALOG`) it reads the shipped result of the same fit
(`catalog/data/fitted.toml`, see `fit/shipped.py`), which also carries the bands derived from
the cross-validated residuals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from ..catalog.constants import CATALOG, Assumptions
from .table import Table, TransportFit

if TYPE_CHECKING:
    from ..catalog.transports import Transport
    from .kernels import KernelRow
    from .observations import Obs
    from .table import NvlinkFit

# The solvers (`engines`, `kernels`, `observations`) are imported where a fit runs: a process
# that reads the shipped table never runs one, and importing them costs a CLI run ~10 %.


def fit_kernels(rows: Sequence[KernelRow], assumptions: Assumptions = CATALOG) -> Table:
    """NVLink constants per library, instance factors and every transport's fixed term and cost
    per message from `rows` (whose transports carry the figures `assumptions` changes); one with
    no reference in `rows` is unmeasured: its class's median cost per message (fit/kernels.py)."""
    from ..base.quantity import Q
    from ..catalog.transports import load_transports
    from .engines import FALLBACK, initial_engines
    from .kernels import (
        fallback_transport,
        fit_instance_factors,
        fit_nvlink,
        fit_rows,
        fit_transport_rows,
        fixed_prior,
        leaving_costs,
    )

    nvlink = fit_nvlink(rows)
    home_fits = _home_fits(rows, nvlink, assumptions)
    leaving = leaving_costs(home_fits, assumptions)

    def fixed_pair(t: Transport) -> float:
        """Dispatch + combine at T -> 0: both local parts and both leaving latencies."""
        local = nvlink[t.library].alpha_us.scalar
        if t.name in home_fits:
            f = home_fits[t.name][1]
            return local + f.leaving_dispatch_us.scalar + f.leaving_combine_us.scalar
        d, c = fixed_prior(t, nvlink, leaving)
        return local + d.scalar + c.scalar

    factors = fit_instance_factors(rows, fixed_pair)
    table = Table(
        nvlink,
        {},
        factors,
        Q.assumed(FALLBACK["kernel_floor_us"], "us", "fallback (no fit yet)"),
        Q.assumed(FALLBACK["expert_efficiency"], "", "fallback: the dense HBM efficiency (no fit yet)"),
        initial_engines(),
        leaving={f: (v.dispatch_us, v.combine_us, v.signal_ratio) for f, v in leaving.items()},
        assumptions=assumptions,
    )
    fitted: dict[str, TransportFit] = {}
    for t in load_transports().values():
        own = fit_rows(t, rows)
        if own:  # the rows carry the transport with the figures the assumptions change
            fitted[t.name] = fit_transport_rows(
                own[0].transport, own, nvlink, leaving, table.instance_factor, assumptions
            )
    for t in load_transports().values():
        if t.name not in fitted:
            fitted[t.name] = fallback_transport(t, fitted, nvlink, leaving)
    return replace(table, transports=fitted)


def _home_fits(
    rows: Sequence[KernelRow], nvlink: dict[str, NvlinkFit], assumptions: Assumptions
) -> dict[str, tuple[Transport, TransportFit]]:
    """Transports whose home-instance rows pin their fixed term: the fabric's leaving cost."""
    from ..base.quantity import Q
    from ..catalog.transports import load_transports
    from .kernels import HOME, fit_rows, fit_transport_rows, spans_tokens

    home_factor = Q.derived(1.0, "", "the reference instance of the factors")
    out = {}
    for t in load_transports().values():
        home = [r for r in fit_rows(t, rows) if r.ref.instance == HOME]
        if spans_tokens(home):
            fit = fit_transport_rows(
                home[0].transport, home, nvlink, None, lambda _: home_factor, assumptions
            )
            out[t.name] = (t, fit)
    return out


def fit_table(rows: Sequence[KernelRow], obs: Sequence[Obs], assumptions: Assumptions = CATALOG) -> Table:
    """The whole fit: kernels from kernel references, then engines from serving observations,
    and the combinations those observations cover (the bands' evidence, fit/evidence.py); the
    observations are evaluated under the table's assumptions (`fit/engines.py`)."""
    from .engines import fit_serving
    from .evidence import covered_keys

    return replace(fit_serving(obs, fit_kernels(rows, assumptions)), covered=covered_keys(obs))


def built_in_table(assumptions: Assumptions = CATALOG) -> Table:
    """The fit of every catalog reference: read from the shipped file (`fit/shipped.py`) under
    the catalog's constants, or refitted (and cached per value) under other assumptions, with
    the shipped bands."""
    return _built_in(assumptions)


@lru_cache(maxsize=64)
def _built_in(assumptions: Assumptions) -> Table:
    from ..catalog._toml import packaged_text
    from .shipped import FILE, from_toml

    try:
        text, where = packaged_text(FILE)
    except FileNotFoundError:
        text, where = None, None
    shipped = from_toml(text, where) if text is not None else None
    if assumptions == CATALOG and shipped is not None:
        return shipped
    from .kernels import kernel_rows
    from .observations import observations

    table = fit_table(kernel_rows(assumptions), observations(), assumptions)
    return replace(table, bands=shipped.bands if shipped is not None else {})
