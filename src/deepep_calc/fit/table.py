"""The constants table: what the fit stage produces and the physics consumes.

One `Table` holds every fitted constant as a tagged `Q` whose source names the references it
rests on. `step_constants(r)` and `kernel_constants(...)` hand the physics exactly the pieces
one evaluation needs, so physics never fits and the fit never formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..base.quantity import Q
from ..physics.collectives import CollectiveConstants
from ..physics.deepep import KernelConstants
from ..physics.step import EngineConstants, StepConstants


@dataclass(frozen=True, eq=False)
class TransportFit:
    """Kernel constants of one transport, stated at the p5en-equivalent instance (f = 1)."""

    alpha_dispatch_us: Q
    alpha_combine_us: Q
    beta_dispatch_us: Q  # per remote selection, at the reference's lanes
    beta_combine_us: Q
    reference_lanes: float
    residual_us: tuple[float, ...] = ()  # primary reference: model - measured (dispatch, combine)


@dataclass(frozen=True, eq=False)
class Table:
    nvlink_alpha_us: Q
    nvlink_efficiency: Q
    transports: dict[str, TransportFit]
    instance_factors: dict[str, Q]
    kernel_floor_us: Q
    expert_efficiency: Q
    hop_nvlink_us: Q
    hop_efa_us: Q
    engines: dict[tuple[str, bool], EngineConstants]
    bands: dict[str, tuple[float, float]] = field(default_factory=dict)  # kind -> (low, high) factors
    notes: tuple[str, ...] = ()

    def instance_factor(self, instance: str) -> Q:
        f = self.instance_factors.get(instance)
        if f is None:
            return Q.assumed(1.0, "", f"no same-harness kernel pair for {instance}: factor 1 assumed")
        return f

    def kernel_constants(self, transport: str, instance: str) -> KernelConstants:
        t = self.transports[transport]
        return KernelConstants(
            t.alpha_dispatch_us,
            t.alpha_combine_us,
            t.beta_dispatch_us,
            t.beta_combine_us,
            t.reference_lanes,
            self.instance_factor(instance),
            self.nvlink_alpha_us,
            self.nvlink_efficiency,
        )

    def engine(self, engine: str, graphs: bool) -> EngineConstants:
        return self.engines[(engine, graphs)]

    def step_constants(self, r: Any) -> StepConstants:
        """The constants one scenario's steps need (resolved transport, instance, engine)."""
        return StepConstants(
            self.engine(r.engine.name, False),
            self.engine(r.engine.name, True),
            self.kernel_floor_us,
            self.expert_efficiency,
            self.kernel_constants(r.transport.name, r.instance.name),
            CollectiveConstants(self.hop_nvlink_us, self.hop_efa_us, self.nvlink_efficiency),
        )

    def with_engine(self, engine: str, graphs: bool, constants: EngineConstants) -> Table:
        return replace(self, engines={**self.engines, (engine, graphs): constants})

    def with_transport(self, name: str, fit: TransportFit) -> Table:
        return replace(self, transports={**self.transports, name: fit})

    def band(self, kind: str) -> tuple[float, float] | None:
        return self.bands.get(kind)
