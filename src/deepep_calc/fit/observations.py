"""Serving observations: every measured cell leg and every serving reference, as one record.

The fit (`fit/engines.py`) and the accuracy report (`accuracy/validate.py`) work from these, so a
cell of measured.toml and a DeepSeek-scale row of references.toml are handled the same way:
a scenario, the arm that ran it, what was measured, how much to trust it, and the groups a
cross-validation can leave out (engine, model, transport, instance, A/B pair).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from ..catalog.measured import Cell, load_cells
from ..catalog.references import reference_models
from ..question.scenario import Resolved, Scenario, resolve

if TYPE_CHECKING:
    from ..catalog.models import ModelSpec
    from ..catalog.references import ServingRef

# The serving references' catalog is read only by what compares against it (the fit,
# validation): the card's calibration table needs a cell's scenario, not the references.


@dataclass(frozen=True)
class Obs:
    """One leg of one measured run."""

    id: str  # "trt-ab-k8-c4:deepep"
    run: str  # the cell or reference id
    leg: str  # "deepep", "allgather" or "versus" (the second DeepEP transport of a cell)
    arm: str  # the model arm that reproduces it
    scenario: Scenario
    attention_tp: int
    disaggregated: bool
    max_batch: int | None
    step_ms: float | None  # ITL / TPOT, or 1000 / per-user tok/s
    aggregate_tok_s: float | None
    ttft_ms: float | None
    trust: str  # "measured" or "assumed"
    use: str  # "fit" (may pin a constant) or "check" (only predicted)
    source: str
    pair: str = ""  # A/B key: both legs share it
    steady_aggregate_tok_s: float | None = None  # derived: the run less a cold start (Cell.cold_start)
    cold_start: str = ""
    # specs known only in memory that the scenario's model may name: a user's config.json, read
    # by calibrate (this layer reads no file); the references' own are always known
    models: Mapping[str, ModelSpec] = field(default_factory=dict, compare=False)

    @property
    def engine(self) -> str:
        return self.scenario.engine

    @property
    def graphs(self) -> bool:
        return self.scenario.cuda_graphs

    @property
    def transport(self) -> str:
        return self.scenario.transport

    @property
    def model(self) -> str:
        return self.scenario.model

    @property
    def instance(self) -> str:
        return self.scenario.instance

    @property
    def deepep(self) -> bool:
        return self.arm == "deepep"

    def groups(self) -> dict[str, str]:
        """The keys a cross-validation fold can leave out."""
        return {
            "engine": self.engine,
            "model": self.model,
            "transport": self.transport if self.deepep else "(dense)",
            "instance": self.instance,
            "run": self.pair or self.run,
        }

    def resolved(self) -> Resolved:
        r = resolve(self.scenario, {**reference_models(), **self.models})
        batch = self.max_batch or r.max_batch
        source = "the run's own setting" if self.max_batch else r.max_batch_source
        return replace(
            r,
            attention_tp=self.attention_tp,
            disaggregated=self.disaggregated,
            max_batch=batch,
            max_batch_source=source,
        )


def _cell_obs(cell: Cell) -> list[Obs]:
    out = []
    legs = (("deepep", "deepep", cell.transport), ("allgather", "allgather", cell.transport))
    if cell.versus is not None and cell.versus_transport:
        legs = (*legs, ("versus", "deepep", cell.versus_transport))
    pair = cell.id if (cell.allgather is not None or cell.versus is not None) else ""
    for leg, arm, transport in legs:
        m = cell.leg(leg)
        if m is None:
            continue
        scenario = Scenario(
            model=cell.model,
            instance=cell.instance,
            nodes=cell.nodes,
            engine=cell.engine,
            cuda_graphs=cell.cuda_graphs,
            transport=transport,
            comms=cell.comms,
            max_qps=cell.max_qps,
            concurrency=cell.concurrency,
            isl=max(cell.isl, 1),
            osl=max(cell.osl, 1),
        )
        out.append(
            Obs(
                id=f"{cell.id}:{leg}",
                run=cell.id,
                leg=leg,
                arm=arm,
                scenario=scenario,
                attention_tp=1,
                disaggregated=False,
                max_batch=cell.max_batch,
                step_ms=cell.step_ms(leg),
                aggregate_tok_s=m.aggregate_tok_s,
                ttft_ms=m.ttft_p50_ms,
                trust="measured",
                use="fit",
                source=f"{cell.source} [cell {cell.id}]",
                pair=pair,
                steady_aggregate_tok_s=m.steady_aggregate_tok_s,
                cold_start=cell.cold_start,
            )
        )
    return out


def _ref_obs(ref: ServingRef) -> Obs:
    scenario = Scenario(
        model=ref.model,
        instance=ref.instance,
        nodes=ref.nodes,
        gpus_per_node=ref.gpus_per_node,
        engine=ref.engine,
        cuda_graphs=ref.cuda_graphs,
        transport=ref.transport,
        comms=ref.comms,
        concurrency=ref.concurrency,
        isl=ref.isl,
        osl=ref.osl,
    )
    leg = "deepep" if ref.arm == "deepep" else "allgather"
    return Obs(
        id=ref.id,
        run=ref.id,
        leg=leg,
        arm=ref.arm,
        scenario=scenario,
        attention_tp=ref.attention_tp,
        disaggregated=ref.disaggregated,
        max_batch=None,
        step_ms=ref.tpot_ms,
        aggregate_tok_s=None,
        ttft_ms=None,
        trust=ref.trust,
        use=ref.use,
        source=ref.source,
        pair=ref.pair,
    )


@cache
def observations() -> tuple[Obs, ...]:
    """Every usable measured run: the catalog's cells first, then the serving references."""
    out: list[Obs] = []
    for cell in load_cells().values():
        if cell.role == "reference-only":
            continue
        out.extend(_cell_obs(cell))
    from ..catalog.references import load_serving_refs

    out.extend(_ref_obs(ref) for ref in load_serving_refs().values())
    return tuple(out)


def cell_observations(cells: list[Cell]) -> list[Obs]:
    """A user's cells (from a calibration profile) as observations."""
    return [o for cell in cells for o in _cell_obs(cell)]


def pairs(obs: tuple[Obs, ...] | list[Obs]) -> dict[str, dict[str, Obs]]:
    """A/B pairs: pair key -> leg -> observation (only complete pairs)."""
    grouped: dict[str, dict[str, Obs]] = {}
    for o in obs:
        if o.pair:
            grouped.setdefault(o.pair, {})[o.leg] = o
    return {k: v for k, v in grouped.items() if "deepep" in v and len(v) >= 2}


def cell_scenario(cell: Cell) -> Scenario:
    """The scenario a measured cell ran (its DeepEP leg)."""
    return _cell_obs(cell)[0].scenario


def describe(o: Obs) -> dict[str, Any]:
    s = o.scenario
    return {
        "model": s.model,
        "instance": s.instance,
        "nodes": s.nodes,
        "engine": s.engine,
        "graphs": s.cuda_graphs,
        "arm": o.arm,
        "transport": s.transport,
        "concurrency": s.concurrency,
    }
