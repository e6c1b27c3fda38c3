"""Decode step and time to first token per arm.

    t_step = t_engine + max(t_HBM, t_compute) + t_MoE-communication + t_proxy

`t_engine` (eager launch cost per layer) and `t_proxy` (the per-MoE-layer serving cost of a
host-proxied transport) are linear in three per-engine constants solved from the measured
cells (physics/fit.py); every other term is computed from the model, the instance and the
transport. Linearity is what lets the fit be an exact solve rather than a search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalog.constants import const
from ..catalog.transports import get_transport
from ..quantity import Q, qmax
from ..scenario import Resolved
from .comm import (
    KernelShape,
    allgather_us,
    allgatherv_one_us,
    allreduce_us,
    kernel_us,
)
from .compute import decode_device_us, prefill_device_us
from .layout import Layout, layout


@dataclass(frozen=True)
class EngineFit:
    """Per-engine constants of the step model (see physics/fit.py for how they are solved)."""

    launch_us_per_layer: Q
    proxy_fixed_us: Q
    proxy_lane_us: Q
    ttft_steps: Q


@dataclass(frozen=True)
class StepParts:
    """A step split into the computed part and the coefficients of the fitted constants."""

    engine_coef: Any
    proxy_fixed_coef: Any
    proxy_lane_coef: Any
    known: dict[str, Q]  # per-step microseconds computed from the physics

    def total_known(self) -> Q:
        total = None
        for q in self.known.values():
            total = q if total is None else total + q
        assert total is not None
        return total


def _graph_factor(r: Resolved) -> Any:
    return np.where(r.scenario.cuda_graphs, const("cuda_graph_factor").value, 1.0)


def _proxy_scale(r: Resolved) -> float:
    """How much host-proxy serving cost this transport pays, relative to efa-proxy.

    GPU-initiated transports pay none; other host proxies scale with their kernel reference.
    """
    t = r.transport
    if not t.host_proxied:
        return 0.0
    ref = get_transport("efa-proxy").reference.total
    return t.reference.total / ref


def _proxy_coefs(r: Resolved, lay: Layout) -> tuple[Any, Any]:
    t = r.transport
    cross = np.asarray(lay.nodes) > 1
    per_layer = r.model.moe_layers * _proxy_scale(r) * cross
    comms = r.scenario.comms if t.comms_sensitive else t.reference.comms
    return per_layer, per_layer / np.asarray(comms, dtype=float)


def _shape(r: Resolved, tokens: Any) -> KernelShape:
    return KernelShape(tokens, r.model.hidden, r.model.topk, r.model.experts, "fp8")


def moe_comm_us(r: Resolved, lay: Layout, tokens_per_rank: Any, prefill: bool = False) -> Q:
    """Communication of all MoE (or TP) layers of one step for this arm."""
    m, inst, s = r.model, r.instance, r.scenario
    if lay.arm == "deepep":
        alpha = r.profile.alpha if r.profile is not None else None
        k = kernel_us(
            r.transport,
            inst,
            lay.gpn,
            lay.ranks,
            _shape(r, tokens_per_rank),
            s.comms,
            s.max_qps,
            prefill,
            alpha,
        )
        return (k["total"] * m.moe_layers).as_("us")
    if lay.arm == "tp":
        ar = allreduce_us(inst, lay.ranks, lay.nodes, lay.gpn, tokens_per_rank, m.hidden)
        return (ar * (2.0 * m.layers)).as_("us")
    if prefill:
        one = allgatherv_one_us(inst, lay.ranks, lay.nodes, lay.gpn, tokens_per_rank, m.hidden)
        return (one * (2.0 * m.moe_layers)).as_("us")
    ag = allgather_us(inst, lay.ranks, lay.nodes, lay.gpn, tokens_per_rank, m.hidden)
    return (ag * (2.0 * m.moe_layers)).as_("us")


def shared(memo: dict[Any, Any] | None, key: Any, make: Any) -> Any:
    """`make()` once per evaluation for pieces several arms have in common.

    DeepEP and allgather place the model identically, so their HBM / compute times and memory
    are the same numbers; a flip-search candidate that only changes the DeepEP transport reuses
    them too. `memo` lives for one `compute()` (and its transport candidates), never longer.
    """
    if memo is None:
        return make()
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _placement(arm: str) -> str:
    return "ep-dp" if arm in ("deepep", "allgather") else arm


def decode_parts(
    r: Resolved, arm: str, concurrency: Any | None = None, memo: dict[Any, Any] | None = None
) -> StepParts:
    s = r.scenario
    memo = memo if concurrency is None else None
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm, concurrency))
    dev = shared(memo, ("decode", _placement(arm)), lambda: decode_device_us(r, lay, s.isl, s.osl))
    tokens = lay.seqs_per_rank if lay.data_parallel else lay.group_tokens
    comm = moe_comm_us(r, lay, tokens)
    hbm = dev["hbm"]
    compute_excess = qmax(dev["compute"] - hbm, hbm * 0.0)
    fixed, lane = _proxy_coefs(r, lay) if arm == "deepep" else (0.0, 0.0)
    engine_coef = r.model.layers * _graph_factor(r)
    return StepParts(engine_coef, fixed, lane, {"hbm": hbm, "compute": compute_excess, "moe_comm": comm})


def prefill_parts(r: Resolved, arm: str, memo: dict[Any, Any] | None = None) -> StepParts:
    s = r.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    tokens = np.asarray(s.isl, dtype=float)
    dev = shared(memo, ("prefill", _placement(arm)), lambda: prefill_device_us(r, lay, tokens))
    comm = moe_comm_us(r, lay, tokens, prefill=True)
    fixed, lane = _proxy_coefs(r, lay) if arm == "deepep" else (0.0, 0.0)
    return StepParts(r.model.layers * _graph_factor(r), fixed, lane, {"device": dev, "moe_comm": comm})


def assemble(parts: StepParts, fit: EngineFit) -> tuple[Q, dict[str, Q]]:
    """Step time and its breakdown (ms) from the parts and the engine constants."""
    engine = (fit.launch_us_per_layer * parts.engine_coef).as_("us")
    proxy = (fit.proxy_fixed_us * parts.proxy_fixed_coef + fit.proxy_lane_us * parts.proxy_lane_coef).as_(
        "us"
    )
    breakdown = {"engine": engine, **parts.known, "proxy": proxy}
    total = None
    for q in breakdown.values():
        total = q if total is None else total + q
    assert total is not None
    to_ms = {k: (v / 1000.0).as_("ms") for k, v in breakdown.items()}
    return (total / 1000.0).as_("ms"), to_ms


def ttft_ms(r: Resolved, arm: str, step_ms: Q, fit: EngineFit, memo: dict[Any, Any] | None = None) -> Q:
    """Time to first token: queueing behind in-flight decode steps plus the prefill step."""
    prefill, _ = assemble(prefill_parts(r, arm, memo), fit)
    return ((fit.ttft_steps * step_ms).as_("ms") + prefill).as_("ms")
