"""Solve the step model's engine constants from the user's cells, and alpha from a kernel log.

The unknowns and the equations are those of `physics/fit.py`: for every measured run,

    ITL x 1000 = launch_us_per_layer x engine_coef + proxy_fixed_us x fixed_coef
                 + proxy_lane_us x lane_coef + known

where the coefficients and `known` (HBM, compute, MoE communication) come from the same
`decode_parts` that `evaluate` runs. Which unknowns the runs can pin (docs/calibration.md):

- dense runs give `launch_us_per_layer` (their step has no proxy term);
- DeepEP runs give `proxy_fixed_us` once the launch cost is known;
- DeepEP runs at two or more EP_NUM_COMMS values also separate `proxy_lane_us` (the part
  that EP_NUM_COMMS divides).

An unknown the runs cannot pin keeps the built-in engine's value, tagged assumed. A negative
solution is pinned to 0 and the rest re-solved, as in the built-in fit; residuals are kept.

A kernel log refits the per-layer fixed latency alpha of one transport: alpha = the log's
median minus the bandwidth / issue part the model computes at the log's shape, which is how
`physics.comm.fixed_latency_us` fits the published reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..catalog.hardware import Instance
from ..catalog.measured import Cell
from ..catalog.transports import Transport
from ..errors import FileInputError
from ..physics.comm import KernelShape, _variable_us, fixed_latency_us
from ..physics.fit import UNKNOWNS, _row, engine_fit
from ..physics.step import EngineFit, assemble, decode_parts, prefill_parts, ttft_ms
from ..quantity import Q
from ..scenario import Resolved, Scenario, resolve
from .kernel_log import KernelLog


@dataclass(frozen=True)
class AlphaOverride:
    """Stands in for a profile while fitting: `decode_parts` only asks it for alpha."""

    transport: str
    values: tuple[Q, Q]

    def alpha(self, name: str) -> tuple[Q, Q] | None:
        return self.values if name == self.transport else None


@dataclass(frozen=True)
class FittedConstant:
    """A constant of the step model as the profile will use it, next to the built-in one."""

    q: Q  # its source says which measurements pinned it, or why the built-in value was kept
    builtin: Q


@dataclass(frozen=True)
class Residual:
    cell: str
    arm: str
    quantity: str  # "step_ms", "tax_ms" or "ttft_ms"
    measured: float
    model: float

    @property
    def residual(self) -> float:
        return self.model - self.measured


@dataclass(frozen=True)
class EngineCalibration:
    engine: str
    constants: dict[str, FittedConstant]  # UNKNOWNS + "ttft_steps"
    residuals: list[Residual]

    @property
    def fit(self) -> EngineFit:
        c = self.constants
        return EngineFit(*(c[k].q for k in (*UNKNOWNS, "ttft_steps")))


@dataclass(frozen=True)
class AlphaCalibration:
    """alpha of one transport refitted to a kernel log, with the log's medians (measured)."""

    transport: str
    instance: str
    ep: int
    shape: KernelShape
    comms: int
    qps: int
    dispatch: FittedConstant
    combine: FittedConstant
    dispatch_p50: Q | None
    combine_p50: Q | None
    total_p50: Q | None
    warnings: list[str]

    @property
    def override(self) -> AlphaOverride:
        return AlphaOverride(self.transport, (self.dispatch.q, self.combine.q))


# Kernel log -----------------------------------------------------------------------------------


def fit_alpha(
    log: KernelLog, transport: Transport, instance: Instance, comms: int, qps: int
) -> AlphaCalibration:
    """alpha (dispatch, combine) for `transport` so the model reproduces the log's medians."""
    name = log.path.name
    sh = log.shape
    warnings: list[str] = []
    ep = sh.ranks
    if ep is None and log.ranks:
        ep = len(log.ranks)
        warnings.append(f"kernel log {name}: num_ranks not stated; EP{ep} taken from the ranks that report")
    stated = {"num_tokens": sh.tokens, "hidden": sh.hidden, "num_topk": sh.topk, "num_experts": sh.experts}
    missing = [k for k, v in {**stated, "num_ranks": ep}.items() if v is None]
    if missing:
        raise FileInputError(
            log.path,
            f"the log does not state {', '.join(missing)}; add a line such as "
            "'num_tokens=128, hidden=7168, num_topk=8, num_experts=256, num_ranks=16'",
        )
    assert sh.tokens and sh.hidden and sh.topk and sh.experts and ep
    if transport.name == "nvlink" or ep <= instance.gpus_per_node:
        raise FileInputError(
            log.path,
            f"EP{ep} on {instance.name} ({instance.gpus_per_node} GPUs per node) stays inside one node: it "
            f"measures NVLink, not {transport.name}; a cross-node log is needed to refit {transport.name}",
        )
    if log.dispatch_p50_us is None and log.total_p50_us is None:
        raise FileInputError(log.path, "no dispatch or dispatch + combine avg_t timings to refit from")
    shape = KernelShape(sh.tokens, sh.hidden, sh.topk, sh.experts, "fp8")
    gpn = instance.gpus_per_node
    d_var, c_var = _variable_us(transport, instance, gpn, ep, shape, comms, qps)
    builtin_d, builtin_c = fixed_latency_us(transport.name)
    where = f"EP{ep} on {instance.name}, {sh.tokens} tokens/rank, EP_NUM_COMMS {comms}, {qps} QPs"
    if log.dispatch_p50_us is not None and log.combine_p50_us is not None:
        raw = (log.dispatch_p50_us.scalar - d_var.scalar, log.combine_p50_us.scalar - c_var.scalar)
        how = "median minus the modelled bandwidth / issue part"
    else:
        assert log.total_p50_us is not None
        share = builtin_d.scalar / (builtin_d.scalar + builtin_c.scalar)
        rest = log.total_p50_us.scalar - d_var.scalar - c_var.scalar
        raw = (rest * share, rest * (1.0 - share))
        how = "dispatch + combine median minus the modelled part, split in the built-in alpha ratio"
    out = []
    for kind, value, builtin in (("dispatch", raw[0], builtin_d), ("combine", raw[1], builtin_c)):
        basis = f"{kind} {how} ({where})"
        if value < 0:
            warnings.append(
                f"kernel log {name}: the {kind} median is below what bandwidth and issue rate alone predict; "
                "its alpha is pinned to 0"
            )
            value, basis = 0.0, basis + "; pinned at 0"
        out.append(FittedConstant(Q.derived(value, "us", f"fitted to kernel log {name}: {basis}"), builtin))
    return AlphaCalibration(
        transport.name,
        instance.name,
        ep,
        shape,
        comms,
        qps,
        out[0],
        out[1],
        log.dispatch_p50_us,
        log.combine_p50_us,
        log.total_p50_us,
        warnings + list(log.warnings),
    )


# Engine constants -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Obs:
    cell: Cell
    arm: str  # "deepep" or "allgather"
    r: Resolved

    @property
    def step_ms(self) -> float:
        value = self.cell.step_ms(self.arm)
        assert value is not None
        return value

    @property
    def ttft_ms(self) -> float | None:
        m = self.cell.arm(self.arm)
        return m.ttft_p50_ms if m is not None else None


def _observations(base: Scenario, cells: Sequence[Cell], alpha: AlphaOverride | None) -> list[_Obs]:
    """One equation per DeepEP cell and per distinct dense twin (a twin shared by two cells
    at the same concurrency is one run and counts once)."""
    out: list[_Obs] = []
    dense_seen: set[int] = set()
    for cell in cells:
        s = base.model_copy(
            update={"concurrency": cell.concurrency, "comms": cell.comms, "calibration": None}
        )
        r = resolve(s)
        if alpha is not None:
            r = replace(r, profile=alpha)
        out.append(_Obs(cell, "deepep", r))
        if cell.allgather is not None and cell.concurrency not in dense_seen:
            dense_seen.add(cell.concurrency)
            out.append(_Obs(cell, "allgather", r))
    return out


def _solve(A: np.ndarray, b: np.ndarray, fixed: dict[int, float]) -> tuple[np.ndarray, list[int]]:
    """Least squares over the free unknowns; a negative one is pinned to 0 and the rest re-solved."""
    fixed, pinned = dict(fixed), []
    while True:
        x = np.zeros(A.shape[1])
        for i, v in fixed.items():
            x[i] = v
        free = [i for i in range(A.shape[1]) if i not in fixed]
        if not free:
            return x, pinned
        rhs = b - A @ x
        x[free], *_ = np.linalg.lstsq(A[:, free], rhs, rcond=None)
        negative = [i for i in free if x[i] < 0]
        if not negative:
            return x, pinned
        worst = min(negative, key=lambda i: x[i])
        fixed[worst] = 0.0
        pinned.append(worst)


def _describe(obs: Sequence[_Obs]) -> str:
    """'2 DeepEP runs (conc 4, 8; EP_NUM_COMMS 1) + 1 dense run (conc 4)': what an unknown rests on."""
    parts = []
    for arm, label in (("deepep", "DeepEP"), ("allgather", "dense")):
        mine = [o for o in obs if o.arm == arm]
        if not mine:
            continue
        concs = ", ".join(str(c) for c in sorted({o.cell.concurrency for o in mine}))
        ks = ", ".join(str(k) for k in sorted({o.cell.comms for o in mine}))
        extra = f"; EP_NUM_COMMS {ks}" if arm == "deepep" else ""
        parts.append(f"{len(mine)} {label} run{'s' if len(mine) > 1 else ''} (conc {concs}{extra})")
    return " + ".join(parts)


def fit_engine(
    base: Scenario, cells: Sequence[Cell], alpha: AlphaOverride | None = None
) -> EngineCalibration:
    """The engine constants that make the model reproduce `cells` (exactly when determined)."""
    obs = _observations(base, cells, alpha)
    engine = obs[0].r.engine.name
    builtin = engine_fit(engine)
    builtin_q: dict[str, Q] = {name: getattr(builtin, name) for name in UNKNOWNS}
    rows = [_row(decode_parts(o.r, o.arm)) for o in obs]
    A = np.array([coef for coef, _ in rows])
    b = np.array([o.step_ms * 1000.0 - known for o, (_, known) in zip(obs, rows, strict=True)])

    deepep = [o for o in obs if o.arm == "deepep"]
    dense = [o for o in obs if o.arm == "allgather"]
    reasons: dict[int, str] = {}
    proxied = bool(np.any(A[:, 1] != 0))
    if not proxied:
        why = f"{obs[0].r.transport.name} pays no host-proxy cost in this layout: the runs cannot show it"
        reasons[1] = reasons[2] = why
    else:
        lane_values = {
            round(float(coef[2]), 9) for (coef, _), o in zip(rows, obs, strict=True) if o.arm == "deepep"
        }
        if not obs[0].r.transport.comms_sensitive:
            reasons[2] = f"{obs[0].r.transport.name} does not depend on EP_NUM_COMMS"
        elif len(lane_values) < 2:
            reasons[2] = "needs DeepEP runs at two EP_NUM_COMMS values to separate it from proxy_fixed_us"
        if not dense:
            reasons[0] = "needs a dense run: DeepEP runs alone cannot split launch cost from proxy cost"
    fixed = {i: builtin_q[UNKNOWNS[i]].scalar for i in reasons}
    x, pinned = _solve(A, b, fixed)

    basis = {
        0: f"step of {_describe(dense or deepep)}",
        1: f"step of {_describe(deepep)} minus the modelled rest",
        2: f"step of {_describe(deepep)}: the part that EP_NUM_COMMS divides",
    }
    constants: dict[str, FittedConstant] = {}
    for i, name in enumerate(UNKNOWNS):
        ref = builtin_q[name]
        if i in reasons:
            q = Q.assumed(x[i], "us", f"built-in {engine} value kept: {reasons[i]} ({ref.source})")
            constants[name] = FittedConstant(q, ref)
            continue
        how = basis[i] + ("; pinned at 0 (a negative value is unphysical)" if i in pinned else "")
        constants[name] = FittedConstant(Q.derived(x[i], "us", f"fitted to your runs: {how}"), ref)

    partial = EngineFit(*(constants[k].q for k in UNKNOWNS), Q.derived(0.0, "steps", ""))
    constants["ttft_steps"] = _fit_ttft(obs, partial, builtin.ttft_steps)
    calibration = EngineCalibration(engine, constants, [])
    calibration.residuals.extend(_residuals(obs, calibration.fit))
    return calibration


def _fit_ttft(obs: Sequence[_Obs], partial: EngineFit, builtin: Q) -> FittedConstant:
    """TTFT = prefill + steps x decode step: least squares over the runs' TTFT p50, steps >= 0."""
    num = den = 0.0
    used = []
    for o in obs:
        if o.ttft_ms is None:
            continue
        step, _ = assemble(decode_parts(o.r, o.arm), partial)
        prefill, _ = assemble(prefill_parts(o.r, o.arm), partial)
        num += step.scalar * (o.ttft_ms - prefill.scalar)
        den += step.scalar**2
        used.append(o)
    if not used or den <= 0:
        why = "no TTFT p50 in the runs"
        q = Q.assumed(builtin.scalar, "steps", f"built-in value kept: {why} ({builtin.source})")
        return FittedConstant(q, builtin)
    steps = max(num / den, 0.0)
    how = f"(TTFT p50 - modelled prefill) / decode step of {_describe(used)}"
    return FittedConstant(Q.derived(steps, "steps", f"fitted to your runs: {how}"), builtin)


def _residuals(obs: Sequence[_Obs], fit: EngineFit) -> list[Residual]:
    out: list[Residual] = []
    model_step: dict[tuple[str, str], float] = {}
    for o in obs:
        step, _ = assemble(decode_parts(o.r, o.arm), fit)
        model_step[(o.cell.id, o.arm)] = step.scalar
        out.append(Residual(o.cell.id, o.arm, "step_ms", o.step_ms, step.scalar))
        if o.ttft_ms is not None:
            ttft = ttft_ms(o.r, o.arm, step, fit).scalar
            out.append(Residual(o.cell.id, o.arm, "ttft_ms", o.ttft_ms, ttft))
    for o in obs:
        if o.arm != "deepep" or o.cell.allgather is None:
            continue
        dense_step = o.cell.step_ms("allgather")
        assert dense_step is not None
        r = o.r
        dense_model, _ = assemble(decode_parts(r, "allgather"), fit)
        out.append(
            Residual(
                o.cell.id,
                "deepep-allgather",
                "tax_ms",
                o.step_ms - dense_step,
                model_step[(o.cell.id, "deepep")] - dense_model.scalar,
            )
        )
    return out
