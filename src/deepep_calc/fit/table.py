"""The constants table: what the fit stage produces and the physics consumes.

One `Table` holds every fitted constant as a tagged `Q` whose source names the references it
rests on. `step_constants(r)` and `kernel_constants(...)` hand the physics exactly the pieces
one evaluation needs, so physics never fits and the fit never formats. NCCL's own collective
figures are measured, not fitted: they come from the catalog (`physics/collectives.py`).
A table also carries the assumed constants it was fitted under (`Assumptions`): a what-if on
constants is a table fitted under other values (`fit.build.built_in_table(assumptions)`)
passed to `compute(r, table=...)`, which evaluates the question under the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..base.quantity import Q
from ..catalog.constants import CATALOG, Assumptions
from ..catalog.transports import get_transport
from ..physics.collectives import collective_constants
from ..physics.deepep import KernelConstants
from ..physics.step import EngineConstants, ExchangeTerm, StepConstants


@dataclass(frozen=True, eq=False)
class TransportFit:
    """Kernel constants of one transport across nodes, stated at the home instance (f = 1)."""

    leaving_dispatch_us: Q  # latency of leaving the node in one dispatch (fitted.toml: alpha_dispatch_us)
    leaving_combine_us: Q  # and in one combine (fitted.toml: alpha_combine_us)
    beta_dispatch_us: Q  # cost of one data message (a put), at the reference's lanes
    beta_combine_us: Q
    reference_lanes: float
    signal_ratio: Q  # one signal (a remote atomic) costs this many data messages
    residual_us: tuple[float, ...] = ()  # one reference fitted: model - measured (dispatch, combine)


@dataclass(frozen=True, eq=False)
class NvlinkFit:
    """One library's kernels inside one node: fixed latency (dispatch + combine) and the
    fraction of the NVLink peak its bytes move at."""

    alpha_us: Q
    efficiency: Q


@dataclass(frozen=True, eq=False)
class Table:
    nvlink: dict[str, NvlinkFit]  # by library (catalog/transports.py `Library`)
    transports: dict[str, TransportFit]
    instance_factors: dict[str, Q]
    kernel_floor_us: Q
    expert_efficiency: Q
    engines: dict[tuple[str, bool], EngineConstants]
    exchange_terms: dict[tuple[str, str], ExchangeTerm] = field(
        default_factory=dict
    )  # (engine, exchange kind)
    leaving: dict[str, tuple[Q, Q, Q]] = field(default_factory=dict)  # fabric -> leaving D / C, signal ratio
    covered: frozenset[str] = frozenset()  # evidence keys the references cover (fit/evidence.py)
    bands: dict[str, tuple[float, float]] = field(default_factory=dict)  # kind -> (low, high) factors
    # the assumed constants the table was fitted under; what it computes runs under them too
    assumptions: Assumptions = CATALOG

    def instance_factor(self, instance: str) -> Q:
        f = self.instance_factors.get(instance)
        if f is None:
            return Q.assumed(1.0, "", f"no same-harness kernel pair for {instance}: factor 1 assumed")
        return f

    def nvlink_fit(self, library: str) -> NvlinkFit:
        return self.nvlink.get(library) or self.nvlink["deepep-v2"]

    def kernel_constants(self, transport: str, instance: str) -> KernelConstants:
        t = self.transports[transport]
        nvl = self.nvlink_fit(get_transport(transport).library)
        return KernelConstants(
            t.leaving_dispatch_us,
            t.leaving_combine_us,
            t.beta_dispatch_us,
            t.beta_combine_us,
            t.reference_lanes,
            self.instance_factor(instance),
            nvl.alpha_us,
            nvl.efficiency,
            t.signal_ratio,
        )

    def engine(self, engine: str, graphs: bool) -> EngineConstants:
        return self.engines[(engine, graphs)]

    def step_constants(self, r: Any) -> StepConstants:
        """The constants one scenario's steps need (resolved transport, instance, engine)."""
        name = r.engine.name
        return StepConstants(
            self.engine(name, False),
            self.engine(name, True),
            self.kernel_floor_us,
            self.expert_efficiency,
            self.kernel_constants(r.transport.name, r.instance.name),
            collective_constants(r.instance, self.assumptions),
            {kind: term for (engine, kind), term in self.exchange_terms.items() if engine == name},
        )

    def with_engine(self, engine: str, graphs: bool, constants: EngineConstants) -> Table:
        return replace(self, engines={**self.engines, (engine, graphs): constants})

    def with_transport(self, name: str, fit: TransportFit) -> Table:
        return replace(self, transports={**self.transports, name: fit})

    def band(self, kind: str, covered: bool = True) -> tuple[float, float] | None:
        """The band of a kind of figure: where references cover its combination, or (the wider
        one) where none does, falling back to the first when the second is unknown."""
        if not covered:
            wide = self.bands.get(kind + ":uncovered")
            if wide is not None:
                return wide
        return self.bands.get(kind)
