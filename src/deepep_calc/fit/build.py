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
    """NVLink constants per library, instance factors and every transport's fixed term and cost
    per message from `rows`; a transport with no reference in `rows` is unmeasured and takes
    its class's median cost per message (fit/kernels.py)."""
    from ..base.quantity import Q
    from ..catalog.transports import Transport, load_transports
    from .engines import FALLBACK, initial_engines
    from .kernels import (
        HOME,
        fallback_transport,
        fit_instance_factors,
        fit_nvlink,
        fit_rows,
        fit_transport_rows,
        fixed_prior,
        leaving_costs,
        spans_tokens,
    )

    nvlink = fit_nvlink(rows)
    home_factor = Q.derived(1.0, "", "the reference instance of the factors")
    home_fits = {}  # transports whose home-instance rows pin their fixed term: the leaving cost
    for t in load_transports().values():
        home = [r for r in fit_rows(t, rows) if r.ref.instance == HOME]
        if spans_tokens(home):
            home_fits[t.name] = (
                t,
                fit_transport_rows(home[0].transport, home, nvlink, None, lambda _: home_factor),
            )
    leaving = leaving_costs(home_fits)

    def fixed_pair(t: Transport) -> float:
        """Dispatch + combine at T -> 0: both local parts and both leaving latencies."""
        local = nvlink[t.library].alpha_us.scalar
        if t.name in home_fits:
            f = home_fits[t.name][1]
            return local + f.alpha_dispatch_us.scalar + f.alpha_combine_us.scalar
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
    )
    fitted: dict[str, TransportFit] = {}
    for t in load_transports().values():
        own = fit_rows(t, rows)
        if own:  # the rows carry the transport as the active overrides see it
            fitted[t.name] = fit_transport_rows(own[0].transport, own, nvlink, leaving, table.instance_factor)
    for t in load_transports().values():
        if t.name not in fitted:
            fitted[t.name] = fallback_transport(t, fitted, nvlink, leaving)
    return replace(table, transports=fitted)


def fit_table(rows: Sequence[KernelRow], obs: Sequence[Obs]) -> Table:
    """The whole fit: kernels from kernel references, then engines from serving observations,
    and the combinations those observations cover (the bands' evidence, fit/evidence.py)."""
    from .engines import fit_serving
    from .evidence import covered_keys

    return replace(fit_serving(obs, fit_kernels(rows)), covered=covered_keys(obs))


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
