"""Engine and hardware constants from serving observations, in stages (non-DeepEP arms first).

Stage G (CUDA graphs, non-DeepEP arms and one-node EP): `step = step_us(engine) + device + floor x
    kernels + exchange + L x (fixed + token x group tokens)` is linear in [kernel floor and the
    expert read efficiency (hardware), step_us per engine, and per engine x exchange kind what
    the engine adds around NCCL's collectives (`ExchangeTerm`, L exchange layers)], least squares
    over every such graph-mode observation. NCCL's own collectives are measured (catalog), so
    the engine term is fitted only on that engine's dense runs and never lent to another.
Stage E (eager, non-DeepEP arms): `step = max(launch_us x kernels + step_us, GPU path)`; where the
    CPU path is the longer, `launch_us` per engine is the least-squares solution with step_us
    taken from the engine's graph-mode value (the same host work, before the launches).
Stage P (eager, DeepEP over a host proxy, cross-node): `step = max(CPU, GPU + L_moe x
    (proxy_fixed_us + proxy_lane_us / lanes))`: the proxy's host work delays the GPU, not the
    launching thread. Least squares on the log error per engine with the stage-E constants held
    fixed: the DeepEP arms never move the launch cost the non-DeepEP arms pinned. An engine with no
    dense eager run (nor a prior engine with one) fits its launch cost here, from its DeepEP
    runs, with proxy_fixed_us pinned at 0 (tagged assumed).
Stage T: `ttft = prefill + ttft_steps x step`, least squares per engine over measured TTFTs.

An aggregate-only observation enters through its step: `step = (running x OSL / aggregate -
prefill) / (OSL - 1 + ttft_steps)`, refined once the TTFT stage has run. A negative solution is
pinned to 0 and the rest re-solved; a constant no observation pins comes from the engine's
`prior_engine`, else the mean of the engines that have it, tagged assumed. Every fitted
constant's source lists the observations it rests on.

Why one module: the stages (non-DeepEP arms under graphs, then eager, then DeepEP arms) solve
one least-squares system in order, each stage holding the previous one's constants fixed;
the order is the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..base.quantity import Q
from ..catalog.engines import load_engines
from ..physics.compute import decode_device_us
from ..physics.layout import layout
from ..physics.serving import running_sequences
from ..physics.step import (
    EngineConstants,
    ExchangeTerm,
    decode_step,
    exchange_kind,
    kernels_per_step,
    prefill_step,
    proxy_lanes,
)
from ..question.scenario import Resolved
from .observations import Obs
from .search import grid_then_golden
from .table import Table

FALLBACK = {  # used only when a fold leaves no observation that pins the constant (us, steps)
    "launch_us": 40.0,
    "step_us": 1000.0,
    "kernel_floor_us": 5.0,
    "expert_efficiency": 0.8,
    "proxy_fixed_us": 0.0,
    "proxy_lane_us": 0.0,
    "ttft_steps": 1.0,
}


@dataclass(frozen=True)
class Pieces:
    """The computed parts of one observation's decode step (us), for the linear stages."""

    obs: Obs
    r: Resolved
    kernels: float
    device: float
    exchange: float  # at the table's current constants, the engine's exchange term included
    term_layers: float  # d exchange / d ExchangeTerm.fixed_us (exchange layers; 0 for DeepEP)
    term_tokens: float  # d exchange / d ExchangeTerm.token_us (layers x decode tokens of the group)
    expert_raw: float  # expert read at the HBM peak: d device / d (1 / expert efficiency), HBM-bound
    proxied_layers: float  # MoE layers that pay the proxied host cost (0 where none applies)
    lanes: float

    def gpu(self, floor: float) -> float:
        return self.device + floor * self.kernels + self.exchange

    @property
    def kind(self) -> str | None:
        """The engine path of its exchange that an `ExchangeTerm` prices (None for DeepEP)."""
        return exchange_kind(self.obs.arm) if self.term_layers > 0 else None


def pieces(o: Obs, table: Table) -> Pieces:
    r = o.resolved().assume(table.assumptions)  # evaluated under the constants being fitted
    c = table.step_constants(r)
    lay = layout(r, o.arm)
    step = decode_step(r, o.arm, c)
    parts = step.parts_ms
    dev = (parts["hbm"].scalar + parts["compute"].scalar + parts["prefill"].scalar) * 1000.0
    raw = decode_device_us(r, lay, r.scenario.isl, r.scenario.osl, c.expert_efficiency)["expert_raw"].scalar
    raw = raw if parts["compute"].scalar <= 0 else 0.0
    ex = parts["moe_comm"].scalar * 1000.0
    kind = exchange_kind(o.arm)
    layers = 0.0
    if kind is not None:
        layers = float(r.model.layers if kind == "tp" else r.model.moe_layers)
    proxied = o.deepep and r.transport.host_proxied and r.scenario.nodes > 1
    lanes = float(np.asarray(proxy_lanes(r)))
    return Pieces(
        o,
        r,
        float(kernels_per_step(r, o.arm)),
        dev,
        ex,
        layers,
        layers * float(np.asarray(lay.group_tokens)),
        raw,
        float(r.model.moe_layers) if proxied else 0.0,
        lanes,
    )


def _nnls(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Least squares with negative unknowns pinned to 0 one at a time."""
    fixed: list[int] = []
    while True:
        free = [i for i in range(A.shape[1]) if i not in fixed]
        x = np.zeros(A.shape[1])
        if free:
            x[free], *_ = np.linalg.lstsq(A[:, free], b, rcond=None)
        neg = [i for i in free if x[i] < 0]
        if not neg:
            return x, fixed
        fixed.append(min(neg, key=lambda i: x[i]))


def _tag(obs: Sequence[Obs]) -> Any:
    return Q.assumed if any(o.trust == "assumed" for o in obs) else Q.derived


def _names(obs: Sequence[Obs]) -> str:
    ids = sorted({o.id for o in obs})
    shown = ", ".join(ids[:6]) + (f" +{len(ids) - 6} more" if len(ids) > 6 else "")
    return shown


@dataclass
class EngineFitState:
    """Constants per (engine, graphs) as floats while the stages run, with their sources."""

    values: dict[tuple[str, bool], dict[str, float]]
    sources: dict[tuple[str, bool], dict[str, tuple[str, Any]]]  # name -> (source, tag maker)

    def set(self, key: tuple[str, bool], name: str, value: float, source: str, tag: Any) -> None:
        self.values.setdefault(key, {})[name] = value
        self.sources.setdefault(key, {})[name] = (source, tag)

    def get(self, key: tuple[str, bool], name: str) -> float | None:
        return self.values.get(key, {}).get(name)


ENGINE_FIELDS = ("launch_us", "step_us", "proxy_fixed_us", "proxy_lane_us", "ttft_steps")


def _constants(state: EngineFitState, key: tuple[str, bool]) -> EngineConstants:
    qs = {}
    for name in ENGINE_FIELDS:
        value = state.values[key][name]
        source, tag = state.sources[key][name]
        qs[name] = tag(value, "steps" if name == "ttft_steps" else "us", source)
    return EngineConstants(**qs)


def _fill_missing(state: EngineFitState) -> None:
    """Constants no observation pinned: the prior engine's, else the mean of the others."""
    engines = load_engines()
    for name, engine in engines.items():
        for graphs in (False, True):
            key = (name, graphs)
            for f in ENGINE_FIELDS:
                if state.get(key, f) is not None:
                    continue
                if graphs and f in ("launch_us", "proxy_fixed_us", "proxy_lane_us"):
                    why = (
                        "no launches under CUDA graphs"
                        if f == "launch_us"
                        else ("graph replay posts through the proxy concurrently (no host sync per layer)")
                    )
                    state.set(key, f, 0.0, f"0 under CUDA graphs: {why}", Q.derived)
                    continue
                if not graphs and f == "step_us" and state.get((name, True), f) is not None:
                    src, tag = state.sources[(name, True)][f]
                    state.set(key, f, state.values[(name, True)][f], f"the graph-mode value: {src}", tag)
                    continue
                if f == "ttft_steps" and state.get((name, not graphs), f) is not None:
                    src, tag = state.sources[(name, not graphs)][f]
                    state.set(
                        key, f, state.values[(name, not graphs)][f], f"the other graph mode's: {src}", tag
                    )
                    continue
                prior = engine.prior_engine
                if prior and state.get((prior, graphs), f) is not None:
                    src, _ = state.sources[(prior, graphs)][f]
                    value = state.values[(prior, graphs)][f]
                    state.set(
                        key,
                        f,
                        value,
                        f"borrowed from {prior} (no {name} observation pins it): {src}",
                        Q.assumed,
                    )
                    continue
                others = [state.get((e, graphs), f) for e in engines if e != name]
                others = [v for v in others if v is not None]
                if others:
                    state.set(
                        key,
                        f,
                        float(np.mean(others)),
                        f"mean of the other engines (no {name} observation pins it)",
                        Q.assumed,
                    )
                else:
                    state.set(
                        key, f, FALLBACK[f], f"fallback {FALLBACK[f]:g}: no observation pins it", Q.assumed
                    )


def _hardware_row(p: Pieces) -> bool:
    """Rows that may pin the hardware constants: non-DeepEP arms, and EP inside one node (NVLink only,
    no DeepEP-over-EFA term). Every DeepEP run that crosses nodes is predicted, never fitted here."""
    return not p.obs.deepep or p.r.scenario.nodes * p.r.gpus_per_node <= p.r.gpus_per_node


def _step_target(p: Pieces, table: Table, ttft_steps: float) -> float | None:
    """The observation's measured decode step (ms -> us), inverting an aggregate if need be."""
    o = p.obs
    if o.step_ms is not None:
        return o.step_ms * 1000.0
    if o.aggregate_tok_s is None:
        return None
    r = p.r
    c = table.step_constants(r)
    prefill = prefill_step(r, o.arm, c).ms.scalar
    running = float(np.asarray(running_sequences(r, layout(r, o.arm)).value))
    osl = float(r.scenario.osl)
    step_ms = (running * osl / o.aggregate_tok_s * 1000.0 - prefill) / (osl - 1.0 + ttft_steps)
    return max(step_ms, 1e-3) * 1000.0


def fit_serving(obs: Sequence[Obs], table: Table, rounds: int = 2, keep: bool = False) -> Table:
    """Run stages G, E, P and T on `obs` (only `use == "fit"` rows), on top of `table`'s kernels.

    `keep`: a user's calibration. Hardware constants (stage G) stay the table's, and a constant
    the user's runs cannot pin keeps the table's value (tagged assumed) instead of a prior.
    """
    obs = [o for o in obs if o.use == "fit"]
    for _ in range(rounds):
        table = _one_round(obs, table, keep)
    return table


def _keep_builtin(state: EngineFitState, table: Table) -> None:
    """A user's fit: every constant their runs did not pin keeps the built-in value."""
    for key in list(state.values):
        base = table.engines[key]
        for f in ENGINE_FIELDS:
            if state.get(key, f) is None:
                q = getattr(base, f)
                state.set(
                    key, f, q.scalar, f"built-in value kept (your runs cannot pin it): {q.source}", Q.assumed
                )


def _one_round(obs: Sequence[Obs], table: Table, keep: bool = False) -> Table:
    """One pass of the four stages, each on the constants the ones before it fitted."""
    state = EngineFitState({}, {})
    ttft_now = {k[0]: v.ttft_steps.scalar for k, v in table.engines.items() if not k[1]}
    if not keep:  # a user's calibration keeps the table's hardware constants
        table = _stage_graphs([pieces(o, table) for o in obs], table, state, ttft_now)
    ps = [pieces(o, table) for o in obs]  # exchange with the fitted engine terms
    _stage_eager(ps, table, state, ttft_now, keep)
    _stage_proxy(ps, table, state, ttft_now, keep)
    _stage_ttft(ps, table, state, keep)
    return _table_with(table, state)


def _stage_graphs(ps: list[Pieces], table: Table, state: EngineFitState, ttft_now: dict[str, float]) -> Table:
    """Stage G: non-DeepEP arms (and one-node EP) under CUDA graphs pin the hardware constants (the
    kernel floor, the expert efficiency), each engine's graph-mode host cost per step, and what
    each engine adds around its collectives. A relative least squares, non-negative."""
    graph_dense = [p for p in ps if p.obs.graphs and _hardware_row(p)]
    engines_g = sorted({p.obs.engine for p in graph_dense})
    terms_g = sorted({(p.obs.engine, p.kind) for p in graph_dense if p.kind is not None})
    floor, expert_eff = table.kernel_floor_us, table.expert_efficiency
    exchange_terms = dict(table.exchange_terms)
    if graph_dense:
        cols = ["kernel_floor_us", "1/expert_efficiency"]
        cols += [f"step_us:{e}" for e in engines_g]
        cols += [f"{e}:{k}:{part}" for e, k in terms_g for part in ("fixed", "token")]
        A, b = [], []
        for p in graph_dense:
            target = _step_target(p, table, ttft_now.get(p.obs.engine, 1.0))
            if target is None:
                continue
            now = exchange_terms.get((p.obs.engine, p.kind)) if p.kind is not None else None
            ex0 = p.exchange
            if now is not None:
                ex0 -= p.term_layers * now.fixed_us.scalar + p.term_tokens * now.token_us.scalar
            dev0 = p.device - p.expert_raw / expert_eff.scalar
            row = [p.kernels, p.expert_raw]
            row += [1.0 if p.obs.engine == e else 0.0 for e in engines_g]
            for e, k in terms_g:
                mine = (p.obs.engine, p.kind) == (e, k)
                row += [p.term_layers if mine else 0.0, p.term_tokens if mine else 0.0]
            A.append([v / target for v in row])  # relative residuals: every row counts alike
            b.append((target - dev0 - ex0) / target)
        A_, b_ = np.array(A), np.array(b)
        identifiable = A_.any(axis=0)
        x = np.zeros(len(cols))
        sub, _ = _nnls(A_[:, identifiable], b_)
        x[identifiable] = sub
        tag = _tag([p.obs for p in graph_dense])
        rows = _names([p.obs for p in graph_dense])
        src = f"fitted to graph-mode runs with no cross-node DeepEP exchange: {rows}"
        floor = tag(x[0], "us", src) if identifiable[0] else table.kernel_floor_us
        if identifiable[1] and x[1] >= 1.0:  # an efficiency above 1 would be unphysical
            expert_eff = tag(1.0 / x[1], "", src)
        for i, e in enumerate(engines_g):
            mine = [p.obs for p in graph_dense if p.obs.engine == e]
            state.set((e, True), "step_us", float(x[2 + i]), f"fitted to {_names(mine)}", _tag(mine))
        base = 2 + len(engines_g)
        for j, (e, k) in enumerate(terms_g):
            mine = [p.obs for p in graph_dense if (p.obs.engine, p.kind) == (e, k)]
            what = f"what {e} adds around its {k} collectives, fitted to its dense graph-mode runs "
            what += _names(mine)
            exchange_terms[(e, k)] = ExchangeTerm(
                _tag(mine)(float(x[base + 2 * j]), "us", what),
                _tag(mine)(float(x[base + 2 * j + 1]), "us", what),
            )
    return replace(table, kernel_floor_us=floor, expert_efficiency=expert_eff, exchange_terms=exchange_terms)


def _stage_eager(
    ps: list[Pieces], table: Table, state: EngineFitState, ttft_now: dict[str, float], keep: bool
) -> None:
    """Stage E: non-DeepEP arms, eager: each engine's launch cost per kernel (the host cost per step
    from graph mode, else the prior engine's or the mean)."""
    _fill_step_us_for_eager(state)
    if not keep:  # every engine's host cost per step, before the launch cost is solved against it
        _fill_missing_partial(state, ("step_us",))
    if keep:
        for p in ps:
            state.values.setdefault((p.obs.engine, p.obs.graphs), {})
            state.sources.setdefault((p.obs.engine, p.obs.graphs), {})
            if p.obs.graphs:
                continue
            base = table.engines[(p.obs.engine, False)]
            if state.get((p.obs.engine, False), "step_us") is None:
                state.set(
                    (p.obs.engine, False),
                    "step_us",
                    base.step_us.scalar,
                    f"built-in value kept: {base.step_us.source}",
                    Q.assumed,
                )
    for e in sorted({p.obs.engine for p in ps}):
        mine = [p for p in ps if p.obs.engine == e and not p.obs.graphs and not p.obs.deepep]
        step_us = state.get((e, False), "step_us")
        if not mine:
            continue
        h = step_us if step_us is not None else FALLBACK["step_us"]
        rows, targets = [], []
        for p in mine:
            target = _step_target(p, table, ttft_now.get(e, 1.0))
            if target is None:
                continue
            gpu = p.gpu(table.kernel_floor_us.scalar)
            if target <= gpu:  # GPU-bound: says nothing about the launch cost
                continue
            rows.append(p.kernels / target)
            targets.append((target - h) / target)
        if rows:
            launch = max(float(np.dot(rows, targets) / np.dot(rows, rows)), 0.0)
            used = [p.obs for p in mine]
            state.set(
                (e, False), "launch_us", launch, f"fitted to dense eager runs {_names(used)}", _tag(used)
            )
    if keep:
        _keep_builtin(state, table)
    else:  # an engine without a dense eager run borrows its prior engine's launch cost, if any
        _borrow_prior_launch(state)


@dataclass(frozen=True)
class _EngineProxy:
    """One engine's eager runs over a host proxy, with their step targets (us) and what the
    stages before fixed for it: the host's step cost and the launch cost (None: not fitted)."""

    key: tuple[str, bool]
    rows: list[tuple[Pieces, float]]
    h: float
    launch: float | None

    @property
    def used(self) -> list[Obs]:
        return [p.obs for p, _ in self.rows]

    @property
    def src(self) -> str:
        return f"fitted to eager DeepEP runs over a host proxy {_names(self.used)}"

    @property
    def lanes_vary(self) -> bool:
        return len({round(p.lanes, 6) for p, _ in self.rows}) > 1


def _stage_proxy(
    ps: list[Pieces], table: Table, state: EngineFitState, ttft_now: dict[str, float], keep: bool
) -> None:
    """Stage P: DeepEP over a host proxy, eager, cross-node: the proxy's fixed and per-lane cost
    per MoE layer (and the launch cost too, for an engine with no dense eager run)."""
    for e in sorted({p.obs.engine for p in ps}):
        mine = [p for p in ps if p.obs.engine == e and not p.obs.graphs and p.proxied_layers > 0]
        rows = []
        for p in mine:
            target = _step_target(p, table, ttft_now.get(e, 1.0))
            if target is not None:
                rows.append((p, target))
        if not rows:
            continue
        key = (e, False)
        run = _EngineProxy(key, rows, state.get(key, "step_us") or 0.0, state.get(key, "launch_us"))
        if _proxy_hidden(run):
            _pin_hidden_proxy(run, table, state, keep)
        elif keep and not run.lanes_vary:  # a user's runs at one lane count: the built-in lane part stays
            _fit_proxy_fixed(run, table, state)
        else:
            _fit_proxy_free(run, table, state, keep)
    if not keep:
        _fill_missing_partial(state, ("launch_us",))


def _proxy_hidden(run: _EngineProxy) -> bool:
    """A proxy on the GPU path whose every run is bound by its CPU path: its cost is not seen."""
    on_gpu_path = run.rows[0][0].r.engine.proxy_wait == "gpu"
    launch = run.launch
    return on_gpu_path and launch is not None and not any(t > launch * p.kernels + run.h for p, t in run.rows)


def _pin_hidden_proxy(run: _EngineProxy, table: Table, state: EngineFitState, keep: bool) -> None:
    """Hidden under the launches: the fixed part pinned at 0, the lane part kept or pinned too."""
    src, used = run.src, run.used
    why = (
        "; pinned at 0: no run is slower than its CPU path, so the proxy's cost hides under "
        "the launches in every one (bounded above, not pinned)"
    )
    state.set(run.key, "proxy_fixed_us", 0.0, src + why, _tag(used))
    lane_src = f"built-in value kept: {table.engines[run.key].proxy_lane_us.source}" if keep else src + why
    lane_value = table.engines[run.key].proxy_lane_us.scalar if keep else 0.0
    state.set(run.key, "proxy_lane_us", lane_value, lane_src, Q.assumed if keep else _tag(used))


def _fit_proxy_fixed(run: _EngineProxy, table: Table, state: EngineFitState) -> None:
    """Runs at one lane count, keeping the built-in table: only the fixed part is fitted."""
    lane = table.engines[run.key].proxy_lane_us
    fit = _ProxyFit(run.rows, table.kernel_floor_us.scalar, run.h, fit_lane=False)
    fixed, _, _ = _fit_proxy(fit, run.launch or 0.0, lane.scalar)
    pin = "; pinned at 0 (a negative value is unphysical)" if fixed == 0.0 else ""
    state.set(run.key, "proxy_fixed_us", fixed, run.src + pin, _tag(run.used))
    state.set(
        run.key,
        "proxy_lane_us",
        lane.scalar,
        f"built-in value kept (your runs share one lane count): {lane.source}",
        Q.assumed,
    )


def _fit_proxy_free(run: _EngineProxy, table: Table, state: EngineFitState, keep: bool) -> None:
    """The fixed part, the lane part where the lane counts vary, and the launch cost where no
    dense eager run fixed it."""
    key, src, used, lanes_vary = run.key, run.src, run.used, run.lanes_vary
    free_launch = run.launch is None
    fit = _ProxyFit(
        run.rows, table.kernel_floor_us.scalar, run.h, fit_lane=lanes_vary, fit_launch=free_launch
    )
    fixed, lane_us, fitted_launch = _fit_proxy(fit, run.launch or 0.0, 0.0)
    pin = "; pinned at 0 (a negative value is unphysical)"
    note = " (one lane count: all of it fixed)" if not lanes_vary else ""
    if free_launch:
        note += " (pinned at 0: the launch cost is fitted from the same runs)"
    elif fixed == 0.0:
        note += pin
    state.set(key, "proxy_fixed_us", fixed, src + note, _tag(used))
    if lanes_vary:
        state.set(key, "proxy_lane_us", lane_us, src + (pin if lane_us == 0.0 else ""), _tag(used))
    else:
        state.set(key, "proxy_lane_us", 0.0, "not separable: the runs share one lane count", Q.assumed)
    if free_launch and not keep:
        state.set(
            key,
            "launch_us",
            fitted_launch,
            f"from eager DeepEP runs {_names(used)} (no dense run of {key[0]}: fitted with its proxy cost)",
            Q.assumed,
        )


def _stage_ttft(ps: list[Pieces], table: Table, state: EngineFitState, keep: bool) -> None:
    """Stage T: TTFT in decode steps per engine (eager and graphs pooled; prefill from the table
    as the stages before left it)."""
    if keep:
        _keep_builtin(state, table)
    else:
        _fill_missing(state)
    interim = _table_with(table, state)
    for e in sorted({p.obs.engine for p in ps}):
        mine = [p for p in ps if p.obs.engine == e and p.obs.ttft_ms is not None]
        if not mine:
            continue
        num = den = 0.0
        for p in mine:
            c = interim.step_constants(p.r)
            step = _model_step_ms(p, interim)
            prefill = prefill_step(p.r, p.obs.arm, c).ms.scalar
            num += step * (p.obs.ttft_ms - prefill)
            den += step * step
        steps = max(num / den, 0.0) if den > 0 else FALLBACK["ttft_steps"]
        used = [p.obs for p in mine]
        modes = {p.obs.graphs for p in mine} if keep else (False, True)
        for graphs in modes:
            state.set((e, graphs), "ttft_steps", steps, f"fitted to TTFT p50 of {_names(used)}", _tag(used))
    if keep:
        _keep_builtin(state, table)
    else:
        _fill_missing(state)


def _borrow_prior_launch(state: EngineFitState) -> None:
    """Before stage P: an engine without dense eager runs takes its prior engine's launch cost."""
    engines = load_engines()
    for name, engine in engines.items():
        key, prior = (name, False), engine.prior_engine
        if (
            state.get(key, "launch_us") is None
            and prior
            and state.get((prior, False), "launch_us") is not None
        ):
            src, _ = state.sources[(prior, False)]["launch_us"]
            value = state.values[(prior, False)]["launch_us"]
            state.set(key, "launch_us", value, f"borrowed from {prior}: {src}", Q.assumed)


@dataclass(frozen=True)
class _ProxyFit:
    """The runs one proxy fit is made on (with their step targets, us), the constants it holds
    fixed (kernel floor, host step cost) and which of lane and launch cost it fits."""

    rows: Sequence[tuple[Pieces, float]]
    floor: float
    h: float
    fit_lane: bool = True
    fit_launch: bool = False

    @property
    def on_gpu_path(self) -> bool:
        return self.rows[0][0].r.engine.proxy_wait == "gpu"

    def loss(self) -> Callable[[float, float, float], float]:
        """Squared log error of the modelled steps at (fixed, lane, launch)."""
        # The searches evaluate the loss ~10^4 times per fit: each run's terms are read once,
        # and the log is the builtin's (NumPy's costs ~20x more on one float).
        terms = [(p.kernels, p.gpu(self.floor), p.proxied_layers, p.lanes, target) for p, target in self.rows]
        h, on_gpu_path = self.h, self.on_gpu_path

        def loss(f: float, ln: float, la: float) -> float:
            total = 0.0
            for kernels, gpu, layers, lanes, target in terms:
                cpu, proxy = la * kernels + h, layers * (f + ln / lanes)
                step = max(cpu, gpu + proxy) if on_gpu_path else max(cpu, gpu) + proxy
                total += math.log(step / target) ** 2
            return total

        return loss


def _fit_proxy(fit: _ProxyFit, launch: float, lane: float) -> tuple[float, float, float]:
    """(proxy_fixed_us, proxy_lane_us, launch_us) minimising the squared log error of
    `step = max(launch x kernels + h, GPU path + L_moe x (fixed + lane / lanes))` over the runs.

    The proxy's host work delays the GPU (the exchange waits for the proxy's posts), not the
    launching thread, so a run whose CPU path is the longer hides it: such a run bounds the
    proxy cost from above instead of pinning it. Nonlinear (the max), so coordinate descent
    (`_descend`), then a linear polish (`_polish`). With the launch cost free (an engine with
    no dense eager run) the fixed part is pinned at 0: a fixed proxy cost and a CPU path hide
    each other, and only the part that falls with the lanes separates from the launches.
    """
    loss = fit.loss()
    fixed, lane, launch = _descend(fit, loss, lane, launch)
    for _ in range(10):
        f2, l2, la2 = _polish(fit, fixed, lane, launch)
        if (f2, l2, la2) == (fixed, lane, launch) or loss(f2, l2, la2) > loss(fixed, lane, launch) + 1e-12:
            break
        fixed, lane, launch = f2, l2, la2
    return fixed, lane, launch


def _descend(
    fit: _ProxyFit, loss: Callable[[float, float, float], float], lane: float, launch: float
) -> tuple[float, float, float]:
    """Coordinate descent: each constant fitted on a grid refined by golden-section search, >= 0."""
    rows = fit.rows
    fixed = 0.0
    top = max(t for _, t in rows) / max(min(p.proxied_layers for p, _ in rows), 1.0)
    top_launch = max(t / max(p.kernels, 1.0) for p, t in rows)
    for _ in range(6):
        if not fit.fit_launch:  # with the launch cost free, a fixed proxy part and the CPU path
            fixed = grid_then_golden(lambda x, ln=lane, la=launch: loss(x, ln, la), 0.0, top)  # trade off
        if fit.fit_lane:
            lanes = max(p.lanes for p, _ in rows)
            lane = grid_then_golden(lambda x, f=fixed, la=launch: loss(f, x, la), 0.0, top * lanes)
        if fit.fit_launch:
            launch = grid_then_golden(lambda x, f=fixed, ln=lane: loss(f, ln, x), 0.0, top_launch)
    return fixed, lane, launch


def _polish(fit: _ProxyFit, fixed: float, lane: float, launch: float) -> tuple[float, float, float]:
    """One polishing step: at the solution each run is bound by one path; least squares of the
    relative residuals on each path's runs (the linear problem the max hides)."""
    floor, h, on_gpu_path = fit.floor, fit.h, fit.on_gpu_path
    proxy_rows, cpu_rows = [], []
    for p, target in fit.rows:
        cpu = launch * p.kernels + h
        shown = not on_gpu_path or p.gpu(floor) + p.proxied_layers * (fixed + lane / p.lanes) >= cpu
        (proxy_rows if shown else cpu_rows).append((p, target))
    f2, l2, la2 = fixed, lane, launch
    if proxy_rows:
        f2, l2 = _polish_proxy(fit, proxy_rows, fixed, lane, launch)
    if fit.fit_launch and cpu_rows:
        k = np.array([p.kernels / t for p, t in cpu_rows])
        b = np.array([(t - h) / t for _, t in cpu_rows])
        la2 = max(float(np.dot(k, b) / np.dot(k, k)), 0.0)
    return f2, l2, la2


def _polish_proxy(
    fit: _ProxyFit, proxy_rows: list[tuple[Pieces, float]], fixed: float, lane: float, launch: float
) -> tuple[float, float]:
    """Non-negative least squares of the fitted proxy parts over the runs the proxy path binds."""
    floor, h, on_gpu_path = fit.floor, fit.h, fit.on_gpu_path
    f2, l2 = fixed, lane
    cols = ([0] if not fit.fit_launch else []) + ([1] if fit.fit_lane else [])
    if not cols:
        return f2, l2
    A = np.array(
        [[(p.proxied_layers, p.proxied_layers / p.lanes)[c] / t for c in cols] for p, t in proxy_rows]
    )
    known = {0: f2 if fit.fit_launch else 0.0, 1: l2 if not fit.fit_lane else 0.0}
    cpu_now = [launch * p.kernels + h for p, _ in proxy_rows]
    base = [
        p.gpu(floor) if on_gpu_path else max(c0, p.gpu(floor))
        for (p, _), c0 in zip(proxy_rows, cpu_now, strict=True)
    ]
    b = np.array(
        [
            (t - b0 - p.proxied_layers * (known[0] + known[1] / p.lanes)) / t
            for (p, t), b0 in zip(proxy_rows, base, strict=True)
        ]
    )
    x, _ = _nnls(A, b)
    for c, v in zip(cols, x, strict=True):
        if c == 0:
            f2 = float(v)
        else:
            l2 = float(v)
    return f2, l2


def _fill_step_us_for_eager(state: EngineFitState) -> None:
    for (e, graphs), values in list(state.values.items()):
        if graphs and "step_us" in values and state.get((e, False), "step_us") is None:
            src, tag = state.sources[(e, True)]["step_us"]
            state.set((e, False), "step_us", values["step_us"], f"the graph-mode value: {src}", tag)


def _fill_missing_partial(state: EngineFitState, fields: tuple[str, ...]) -> None:
    """Before stage P: launch and step costs for engines without dense runs (prior engine / mean)."""
    engines = load_engines()
    for name, engine in engines.items():
        key = (name, False)
        for f in fields:
            if state.get(key, f) is not None:
                continue
            prior = engine.prior_engine
            if prior and state.get((prior, False), f) is not None:
                src, _ = state.sources[(prior, False)][f]
                state.set(key, f, state.values[(prior, False)][f], f"borrowed from {prior}: {src}", Q.assumed)
                continue
            others = [v for v in (state.get((e, False), f) for e in engines if e != name) if v is not None]
            value = float(np.mean(others)) if others else FALLBACK[f]
            state.set(key, f, value, f"mean of the other engines (no {name} observation pins it)", Q.assumed)


def _table_with(table: Table, state: EngineFitState) -> Table:
    engines = dict(table.engines)
    for key in state.values:
        if all(f in state.values[key] for f in ENGINE_FIELDS):
            engines[key] = _constants(state, key)
    return replace(table, engines=engines)


def _model_step_ms(p: Pieces, table: Table) -> float:
    return decode_step(p.r, p.obs.arm, table.step_constants(p.r)).ms.scalar


def initial_engines() -> dict[tuple[str, bool], EngineConstants]:
    """Fallback constants for every engine and mode: the starting point of the stages."""
    out = {}
    for name in load_engines():
        for graphs in (False, True):

            def q(f: str, value: float) -> Q:
                unit = "steps" if f == "ttft_steps" else "us"
                return Q.assumed(value, unit, f"fallback {value:g} (no fit yet)")

            zero = graphs
            out[(name, graphs)] = EngineConstants(
                q("launch_us", 0.0 if zero else FALLBACK["launch_us"]),
                q("step_us", FALLBACK["step_us"]),
                q("proxy_fixed_us", 0.0),
                q("proxy_lane_us", 0.0),
                q("ttft_steps", FALLBACK["ttft_steps"]),
            )
    return out
