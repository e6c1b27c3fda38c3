"""Refit the model to a user's runs: engine constants from AIPerf cells, a transport from a kernel log.

The equations are the built-in fit's (`fit/engines.py`, `fit/kernels.py`), run on the user's
observations on top of the built-in table, so the same physics that `evaluate` runs decides
what the runs pin (docs/calibration.md):

- dense runs pin the engine's launch cost (its CPU path: `launch_us x kernels + step_us`);
- DeepEP runs over a host proxy pin its proxied host cost per MoE layer; runs at two or more
  EP_NUM_COMMS values also separate the part that more comms divide (`proxy_lane_us`);
- TTFT p50 pins `ttft_steps`.

A constant the runs cannot pin keeps the built-in value, tagged assumed; hardware constants
(kernel floor, collective latencies) always stay the built-in ones. A kernel log refits the
transport's per-selection cost `beta` at the log's shape, with the same fixed-latency prior
the built-in fit uses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..base.errors import FileInputError
from ..base.quantity import Q
from ..catalog.hardware import Instance
from ..catalog.measured import Cell
from ..catalog.models import ModelSpec
from ..catalog.transports import KernelRef, Transport
from ..estimate.arms import model_arm
from ..fit.build import built_in_table
from ..fit.engines import ENGINE_FIELDS, fit_serving
from ..fit.kernels import fit_transport
from ..fit.observations import Obs, cell_observations
from ..fit.table import Table, TransportFit
from ..physics.deepep import KernelShape
from ..question.scenario import Scenario

if TYPE_CHECKING:  # a parsed log is handed in: calibrate reads no file
    from ..io.kernel_log import KernelLog


@dataclass(frozen=True)
class FittedConstant:
    """A constant of the model as the profile will use it, next to the built-in one."""

    q: Q  # its source says which measurements pinned it, or why the built-in value was kept
    builtin: Q


@dataclass(frozen=True)
class Residual:
    cell: str
    leg: str
    quantity: str  # "step_ms", "tax_ms" or "ttft_ms"
    measured: float
    model: float

    @property
    def residual(self) -> float:
        return self.model - self.measured


@dataclass(frozen=True)
class EngineCalibration:
    engine: str
    graphs: bool
    constants: dict[str, FittedConstant]  # ENGINE_FIELDS
    residuals: list[Residual]


@dataclass(frozen=True)
class KernelCalibration:
    """One transport refitted to a kernel log, with the log's medians (measured)."""

    transport: str
    instance: str
    ep: int
    shape: KernelShape
    comms: int
    qps: int
    fit: TransportFit
    dispatch: FittedConstant  # beta: cost per message
    combine: FittedConstant
    dispatch_p50: Q | None
    combine_p50: Q | None
    total_p50: Q | None
    warnings: list[str]


# Kernel log -----------------------------------------------------------------------------------


def fit_kernel(
    log: KernelLog, transport: Transport, instance: Instance, comms: int, qps: int
) -> KernelCalibration:
    """beta (dispatch, combine) for `transport` so the model reproduces the log's medians."""
    name = log.path.name
    sh = log.shape
    warnings: list[str] = []
    ep = _log_ep(log, warnings)
    _check_refittable(log, transport, instance, ep)
    ref = _log_reference(log, instance, ep, comms, qps)
    table = built_in_table()
    fit = fit_transport(transport, ref, table)
    builtin = table.transports[transport.name]
    shape = KernelShape(sh.tokens, sh.hidden, sh.topk, sh.experts, "fp8")
    if any(abs(x) > 0.01 * max(ref.total, 1.0) for x in fit.residual_us):
        warnings.append(
            f"kernel log {name}: the medians are below what the {transport.name} local part, its latency of "
            f"leaving the node, its wire and NVLink bytes alone take at this shape (a log at one token count "
            f"cannot refit those); the model keeps them and misses the log by "
            f"{', '.join(f'{x:+.1f}' for x in fit.residual_us)} us"
        )
    return KernelCalibration(
        transport.name,
        instance.name,
        ep,
        shape,
        comms,
        qps,
        fit,
        FittedConstant(fit.beta_dispatch_us, builtin.beta_dispatch_us),
        FittedConstant(fit.beta_combine_us, builtin.beta_combine_us),
        log.dispatch_p50_us,
        log.combine_p50_us,
        log.total_p50_us,
        warnings + list(log.warnings),
    )


def _log_ep(log: KernelLog, warnings: list[str]) -> int:
    """The log's EP size (counted from its ranks if not stated, with a warning); a log that
    leaves any of the shape unstated cannot be refitted from."""
    sh = log.shape
    ep = sh.ranks
    if ep is None and log.ranks:
        ep = len(log.ranks)
        warnings.append(
            f"kernel log {log.path.name}: num_ranks not stated; EP{ep} taken from the ranks that report"
        )
    stated = {"num_tokens": sh.tokens, "hidden": sh.hidden, "num_topk": sh.topk, "num_experts": sh.experts}
    missing = [k for k, v in {**stated, "num_ranks": ep}.items() if v is None]
    if missing:
        raise FileInputError(
            log.path,
            f"the log does not state {', '.join(missing)}; add a line such as "
            "'num_tokens=128, hidden=7168, num_topk=8, num_experts=256, num_ranks=16'",
        )
    assert sh.tokens and sh.hidden and sh.topk and sh.experts and ep
    return ep


def _check_refittable(log: KernelLog, transport: Transport, instance: Instance, ep: int) -> None:
    """Refuse a log that stays inside one node (it measures NVLink) or has no timings."""
    if transport.name == "nvlink" or ep <= instance.gpus_per_node:
        raise FileInputError(
            log.path,
            f"EP{ep} on {instance.name} ({instance.gpus_per_node} GPUs per node) stays inside one node: it "
            f"measures NVLink, not {transport.name}; a cross-node log is needed to refit {transport.name}",
        )
    if log.dispatch_p50_us is None and log.total_p50_us is None:
        raise FileInputError(log.path, "no dispatch or dispatch + combine avg_t timings to refit from")


def _log_reference(log: KernelLog, instance: Instance, ep: int, comms: int, qps: int) -> KernelRef:
    """The log as a kernel reference to fit: its medians, per direction when it gives both."""
    sh = log.shape
    d50 = log.dispatch_p50_us.scalar if log.dispatch_p50_us is not None else None
    c50 = log.combine_p50_us.scalar if log.combine_p50_us is not None else None
    both = d50 is not None and c50 is not None
    return KernelRef(
        instance=instance.name,
        ep=ep,
        comms=comms,
        qps=qps,
        role="fit",
        tokens=sh.tokens,
        hidden=sh.hidden,
        topk=sh.topk,
        experts=sh.experts,
        dispatch_us=d50 if both else None,
        combine_us=c50 if both else None,
        total_us=None if both else log.total_p50_us.scalar,  # type: ignore[union-attr]
        source=f"kernel log {log.path.name} (EP{ep} on {instance.name}, {sh.tokens} tokens/rank, "
        f"EP_NUM_COMMS {comms}, {qps} QPs)",
    )


# Engine constants -------------------------------------------------------------------------------


def _observations(base: Scenario, cells: Sequence[Cell], models: Mapping[str, ModelSpec]) -> list[Obs]:
    """The user's cells as observations on the profile's scenario (model, instance, nodes); a
    config.json the scenario names comes read, in `models`, for every observation's question."""
    models = dict(models)
    out = []
    for o in cell_observations(list(cells)):
        s = base.copy(
            **{
                "concurrency": o.scenario.concurrency,
                "comms": o.scenario.comms,
                "transport": o.scenario.transport,
                "calibration": None,
            }
        )
        out.append(replace(o, scenario=s, models=models))
    return out


def _describe(obs: Sequence[Obs]) -> str:
    """'2 DeepEP runs (conc 4, 8) + 1 dense run (conc 4)': what a fit rests on."""
    parts = []
    for deepep, label in ((True, "DeepEP"), (False, "dense")):
        mine = [o for o in obs if o.deepep == deepep]
        if mine:
            concs = ", ".join(str(c) for c in sorted({o.scenario.concurrency for o in mine}))
            parts.append(f"{len(mine)} {label} run{'s' if len(mine) > 1 else ''} (conc {concs})")
    return " + ".join(parts)


_REPEATED_LEAD = re.compile(r"^([^:]{3,120}: )(?:\1)+")


def said_once(source: str) -> str:
    """A source with a repeated lead said once: the serving fit runs in rounds, and a constant
    the runs cannot pin keeps the previous round's value, note and all, so its note would read
    "built-in value kept: built-in value kept: ..."."""
    return _REPEATED_LEAD.sub(r"\1", source)


def fit_engine(
    base: Scenario,
    cells: Sequence[Cell],
    kernel: KernelCalibration | None = None,
    models: Mapping[str, ModelSpec] | None = None,
) -> EngineCalibration:
    """The engine constants that make the model reproduce `cells` as closely as they allow.

    `models`: the specs a config.json `base.model` names were read into (`RunSet.resolved.models`);
    a preset model needs none."""
    obs = _observations(base, cells, models or {})
    builtin = built_in_table()
    table = builtin if kernel is None else builtin.with_transport(kernel.transport, kernel.fit)
    fitted = fit_serving(obs, table, keep=True)
    key = (base.engine.strip().lower(), base.cuda_graphs)
    new, old = fitted.engines[key], builtin.engines[key]
    described = _describe(obs)
    constants = {}
    for f in ENGINE_FIELDS:
        q = getattr(new, f)
        q = Q(q.value, q.unit, q.tag, said_once(q.source))
        if q.tag != 0 and "fitted to" in q.source:  # pinned by the runs: say by which
            q = Q(q.value, q.unit, q.tag, f"fitted to your runs ({described}): {q.source}")
        constants[f] = FittedConstant(q, getattr(old, f))
    calibration = EngineCalibration(key[0], key[1], constants, [])
    calibration.residuals.extend(_residuals(obs, fitted))
    return calibration


def _residuals(obs: Sequence[Obs], table: Table) -> list[Residual]:
    out: list[Residual] = []
    steps: dict[tuple[str, str], float] = {}
    for o in obs:
        # the arm as every face sees it, on the model's own figures (no run stands in for itself)
        arm = model_arm(replace(o.resolved(), measured=False), o.arm, table)
        step = arm.model_step_ms.scalar
        steps[(o.run, o.leg)] = step
        if o.step_ms is not None:
            out.append(Residual(o.run, o.leg, "step_ms", o.step_ms, step))
        if o.ttft_ms is not None:
            out.append(Residual(o.run, o.leg, "ttft_ms", o.ttft_ms, arm.ttft_ms.scalar))
    by_run: dict[str, dict[str, Obs]] = {}
    for o in obs:
        by_run.setdefault(o.run, {})[o.leg] = o
    for run, legs in by_run.items():
        dee, dense = legs.get("deepep"), legs.get("allgather")
        if dee is None or dense is None or dee.step_ms is None or dense.step_ms is None:
            continue
        out.append(
            Residual(
                run,
                "deepep-allgather",
                "tax_ms",
                dee.step_ms - dense.step_ms,
                steps[(run, "deepep")] - steps[(run, "allgather")],
            )
        )
    return out
