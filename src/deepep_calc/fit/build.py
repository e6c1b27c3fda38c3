"""The built-in constants table: kernel references and serving observations, fitted once.

`fit_table(rows, obs)` is the whole fit stage (kernels, then engines in stages); the
cross-validation calls it on subsets. `built_in_table()` caches the full fit per set of
constant overrides (the sensitivity tornado refits under each). Without overrides it reads
the shipped result of the same fit (`catalog/data/fitted.toml`, see `fit/shipped.py`), which
also carries the bands derived from the cross-validated residuals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from ..catalog.constants import override_key
from .table import Table, TransportFit

if TYPE_CHECKING:
    from .kernels import KernelRow
    from .observations import Obs

# The solvers (`engines`, `kernels`, `observations`) are imported where a fit runs: a process
# that reads the shipped table never runs one, and importing them costs a CLI run ~10 %.


def fit_kernels(rows: Sequence[KernelRow]) -> Table:
    """NVLink constants, instance factors and every transport's alpha / beta from `rows`; a
    transport with no reference in `rows` is unmeasured and takes its class's median beta."""
    from ..base.quantity import Q
    from ..catalog.transports import load_transports
    from .engines import FALLBACK, initial_engines
    from .kernels import fallback_transport, fit_instance_factors, fit_nvlink, fit_rows, fit_transport_rows

    nvl_alpha, eff, _ = fit_nvlink(rows)
    factors = fit_instance_factors(rows, nvl_alpha)
    table = Table(
        nvl_alpha,
        eff,
        {},
        factors,
        Q.assumed(FALLBACK["kernel_floor_us"], "us", "fallback (no fit yet)"),
        Q.assumed(FALLBACK["expert_efficiency"], "", "fallback: the dense HBM efficiency (no fit yet)"),
        Q.assumed(FALLBACK["hop_nvlink_us"], "us", "fallback (no fit yet)"),
        Q.assumed(FALLBACK["hop_efa_us"], "us", "fallback (no fit yet)"),
        initial_engines(),
    )
    fitted: dict[str, TransportFit] = {}
    for t in load_transports().values():
        own = fit_rows(t, rows)
        if own:  # the rows carry the transport as the active overrides see it
            fitted[t.name] = fit_transport_rows(own[0].transport, own, nvl_alpha, eff, table.instance_factor)
    for t in load_transports().values():
        if t.name not in fitted:
            fitted[t.name] = fallback_transport(t, fitted, nvl_alpha)
    return replace(table, transports=fitted)


def fit_table(rows: Sequence[KernelRow], obs: Sequence[Obs]) -> Table:
    """The whole fit: kernels from kernel references, then engines from serving observations."""
    from .engines import fit_serving

    return fit_serving(obs, fit_kernels(rows))


def built_in_table() -> Table:
    """The fit of every catalog reference: read from the shipped file (`fit/shipped.py`), or
    refitted (and cached apart) under constant overrides, with the shipped bands."""
    return _built_in(override_key())


@lru_cache(maxsize=64)
def _built_in(key: tuple[tuple[str, float], ...]) -> Table:
    from ..catalog._toml import packaged_text
    from .shipped import FILE, from_toml

    try:
        text, where = packaged_text(FILE)
    except FileNotFoundError:
        text, where = None, None
    shipped = from_toml(text, where) if text is not None else None
    if not key and shipped is not None:
        return shipped
    from .kernels import kernel_rows
    from .observations import observations

    table = fit_table(kernel_rows(), observations())
    return replace(table, bands=shipped.bands if shipped is not None else {})
