"""Solve each engine's constants from the measured cells it names (engines.toml `anchors`).

Unknowns per engine, all linear in the step model of physics/step.py:
    x = [launch_us_per_layer, proxy_fixed_us, proxy_lane_us]
Each anchor is one linear equation built from the same `decode_parts` the calculator uses,
so the fitted model reproduces the anchors by construction and nothing is tuned per row.
A negative solution is physically meaningless: that unknown is pinned to 0 and the rest
re-solved by least squares (the residual is then reported, not hidden).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..catalog.constants import override_key
from ..catalog.engines import Anchor, Engine, get_engine
from ..catalog.measured import Cell, load_cells
from ..quantity import Q
from ..scenario import Scenario, resolve
from .step import EngineFit, StepParts, assemble, decode_parts, prefill_parts

UNKNOWNS = ("launch_us_per_layer", "proxy_fixed_us", "proxy_lane_us")


@dataclass(frozen=True)
class FitReport:
    engine: str
    values: dict[str, float]
    borrowed: tuple[str, ...]
    pinned: tuple[str, ...]
    residuals_us: tuple[float, ...]
    anchors: tuple[str, ...]


def cell_scenario(cell: Cell, engine: str, concurrency: int | None = None) -> Scenario:
    return Scenario(
        model=cell.model,
        instance=cell.instance,
        nodes=cell.nodes,
        engine=engine,
        cuda_graphs=False,
        transport=cell.transport,
        alternative="allgather",
        comms=cell.comms,
        concurrency=concurrency or cell.concurrency,
        isl=max(cell.isl, 1),
        osl=max(cell.osl, 1),
    )


def _parts(cell: Cell, engine: str, arm: str) -> StepParts:
    return decode_parts(resolve(cell_scenario(cell, engine)), arm)


def _row(parts: StepParts) -> tuple[np.ndarray, float]:
    coef = np.array([parts.engine_coef, parts.proxy_fixed_coef, parts.proxy_lane_coef], dtype=float)
    return coef, float(parts.total_known().scalar)


def _equation(a: Anchor, engine: str) -> tuple[np.ndarray, float]:
    cell = load_cells()[a.cell]
    coef, known = _row(_parts(cell, engine, a.arm))
    if a.kind == "step":
        target = cell.step_ms(a.arm)
        if target is None:
            raise ValueError(f"anchor cell {cell.id} has no step time for arm {a.arm}")
        return coef, target * 1000.0 - known
    other = a.minus if a.kind == "difference" else a.over
    assert other is not None
    ocoef, oknown = _row(_parts(cell, engine, other))
    if a.kind == "difference":
        s1, s2 = cell.step_ms(a.arm), cell.step_ms(other)
        assert s1 is not None and s2 is not None
        return coef - ocoef, (s1 - s2) * 1000.0 - (known - oknown)
    arm_m, other_m = cell.arm(a.arm), cell.arm(other)
    assert arm_m and other_m and arm_m.aggregate_tok_s and other_m.aggregate_tok_s
    rho = other_m.aggregate_tok_s / arm_m.aggregate_tok_s  # step_arm / step_other
    return coef - rho * ocoef, rho * oknown - known


def _solve(engine: Engine) -> FitReport:
    rows = [_equation(a, engine.name) for a in engine.anchors]
    A = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    free = list(range(3))
    fixed: dict[int, float] = {}
    borrowed: tuple[str, ...] = ()
    if engine.borrow_from:
        donor = solve_engine(engine.borrow_from)
        for i in (1, 2):
            fixed[i] = donor.values[UNKNOWNS[i]]
        borrowed = (UNKNOWNS[1], UNKNOWNS[2])
    pinned: list[str] = []
    while True:
        free = [i for i in range(3) if i not in fixed]
        rhs = b - sum((A[:, i] * v for i, v in fixed.items()), np.zeros_like(b))
        sol, *_ = np.linalg.lstsq(A[:, free], rhs, rcond=None)
        x = np.zeros(3)
        for i, v in fixed.items():
            x[i] = v
        x[free] = sol
        negative = [i for i in free if x[i] < 0]
        if not negative:
            break
        worst = min(negative, key=lambda i: x[i])
        fixed[worst] = 0.0
        pinned.append(UNKNOWNS[worst])
    residuals = tuple(float(v) for v in A @ x - b)
    return FitReport(
        engine.name,
        dict(zip(UNKNOWNS, x.tolist(), strict=True)),
        borrowed,
        tuple(pinned),
        residuals,
        tuple(a.cell for a in engine.anchors),
    )


def solve_engine(name: str) -> FitReport:
    """The engine's fit; re-solved (and cached separately) under constant overrides."""
    return _solve_cached(name, override_key())


@lru_cache(maxsize=256)
def _solve_cached(name: str, _key: tuple[tuple[str, float], ...]) -> FitReport:
    return _solve(get_engine(name))


def engine_fit(name: str) -> EngineFit:
    """Constants of the step model. Under `catalog.constants.overrides` the fit is redone with
    the overridden constants, so the measured anchors stay reproduced exactly."""
    return _engine_fit_cached(name, override_key())


@lru_cache(maxsize=256)
def _engine_fit_cached(name: str, _key: tuple[tuple[str, float], ...]) -> EngineFit:
    rep = solve_engine(name)
    engine = get_engine(name)
    cells = ", ".join(rep.anchors)
    src = f"fitted to measured cells {cells} ({name})"

    def q(key: str) -> Q:
        if key in rep.borrowed:
            return Q.assumed(rep.values[key], "us", f"borrowed from {engine.borrow_from} (no {name} cell)")
        return Q.derived(rep.values[key], "us", src)

    launch, fixed, lane = (q(k) for k in UNKNOWNS)
    partial = EngineFit(launch, fixed, lane, Q.derived(0.0, "steps", ""))
    a = engine.ttft_anchor
    cell = load_cells()[a.cell]
    r = resolve(cell_scenario(cell, name))
    step_ms, _ = assemble(decode_parts(r, a.arm), partial)
    prefill_ms, _ = assemble(prefill_parts(r, a.arm), partial)
    measured = cell.arm(a.arm)
    assert measured is not None and measured.ttft_p50_ms is not None
    steps = max((measured.ttft_p50_ms - prefill_ms.scalar) / step_ms.scalar, 0.0)
    ttft_steps = Q.derived(steps, "steps", f"fitted to TTFT p50 of cell {cell.id} ({a.arm})")
    return EngineFit(launch, fixed, lane, ttft_steps)
