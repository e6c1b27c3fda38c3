"""The load at which another part would bind an arm's decode step, solved on the model.

`physics/bounds.py` names the part that sets a step; this module asks how far the load (running
sequences, so mean tokens per rank) must grow for another part to take its place. The step is
re-evaluated (`decode_step`, then `bounds.step_bound`) at other loads with the batch limit lifted,
so the answer is the model's own, never an extrapolation of it: each of the bound's leads over
its rivals (`leads_us`) is near linear in the load between changes of regime, so the first to
reach zero is estimated from the two latest loads and the model is probed just either side of
that estimate, to `TOLERANCE`. Nothing here is fitted or guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..base.arrays import ceil
from ..base.quantity import Q
from ..question.fields import LIMITS
from ..question.scenario import Resolved
from .bounds import EXCHANGE_BOUNDS, EXCHANGE_CLASSES, PLAIN_PARTS, StepBound, bound_name, step_bound
from .layout import layout
from .step import StepConstants, decode_step, placement, shared

_CPU_ONLY = frozenset({"launches"})
_GPU_ONLY = frozenset({"hbm", "compute", "kernels", "prefill", *EXCHANGE_BOUNDS})


def on_cpu_path(b: StepBound, name: str) -> bool:
    """Whether `name` competes on the CPU path (eager launches, or a part of both paths while the
    CPU path sets the step) rather than on the GPU path."""
    key = _contest_key(name)
    eager = not bool(b.graphs)
    return eager and (key in _CPU_ONLY or (key not in _GPU_ONLY and bool(b.cpu_binds)))


def leads_us(b: StepBound, name: str, cpu: bool) -> list[float]:
    """How far `name` leads each thing that could take its place, us (one scenario): every other
    part of its path (`cpu`: the CPU path; the device's HBM and tensor-core times as they are,
    not their max), and, for a part of one path only, the other path. All positive while it
    binds; each is near linear in the load, so the search extrapolates them one by one."""
    key = _contest_key(name)
    eager = not bool(b.graphs)
    proxy = b.proxy_us.scalar
    gpu_values = _path_values(b.gpu_parts)
    if cpu:
        values = {"launches": b.cpu_parts["launches"].scalar, "host": b.cpu_parts["host"].scalar}
    else:
        values = dict(gpu_values)
        values["host"] = 0.0 if eager else b.gpu_parts["host"].scalar
    values["proxy"] = proxy if (b.host_wait or not cpu) else 0.0
    mine = values.get(key, 0.0)
    out = [mine - v for k, v in sorted(values.items()) if k != key]
    if eager and (key in _CPU_ONLY or key in _GPU_ONLY):
        cpu_side = b.cpu_parts["launches"].scalar + b.cpu_parts["host"].scalar
        device = max(gpu_values["hbm"], gpu_values["compute"])
        gpu_side = sum(v for k, v in gpu_values.items() if k not in ("hbm", "compute")) + device
        if not b.host_wait:
            gpu_side += proxy
        out.append(cpu_side - gpu_side if cpu else gpu_side - cpu_side)
    return out


def lead_us(b: StepBound, name: str) -> float:
    """How far `name` leads where it binds (us): the least of `leads_us`, on the path it binds on
    here. Positive while it binds, negative once another part does."""
    return min(leads_us(b, name, on_cpu_path(b, name)), default=0.0)


def _contest_key(name: str) -> str:
    for cls, members in EXCHANGE_CLASSES.items():
        if name in members:
            return cls
    return name


def _path_values(parts: dict[str, Q]) -> dict[str, float]:
    out = {n: parts[n].scalar for n in PLAIN_PARTS if n in parts and n != "host"}
    for cls, members in EXCHANGE_CLASSES.items():
        out[cls] = sum(parts[n].scalar for n in members)
    return out


@dataclass(frozen=True, eq=False)
class TakeOver:
    """The smallest load at which another part binds the step (one scenario)."""

    running: int  # running sequences there (the whole cluster's)
    factor: float  # running / the scenario's running sequences
    bound: str  # the part that binds there
    evaluations: int  # model evaluations the search took


def running_sequences(r: Resolved, arm: str, memo: dict[Any, Any] | None = None) -> float:
    """Sequences one step of this arm serves across the cluster (queued requests excluded)."""
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    return float(lay.group_tokens) * float(lay.groups)


def _at(r: Resolved, arm: str, c: StepConstants, running: int, seed: dict[Any, Any]) -> StepBound:
    """The step's bound with `running` sequences in flight, the batch limit lifted to hold them."""
    here = replace(r.vary(concurrency=float(running)), max_batch=max(int(r.max_batch), running))
    memo = dict(seed)
    return step_bound(here, arm, c, decode_step(here, arm, c, memo), memo, nic=False)


MAX_FACTOR = 1024.0  # how far the search looks: three orders of magnitude of load
TOLERANCE = 0.02  # the load found is within 2 % of the first that changes the bound
_MAX_EVALUATIONS = 12


# size: the bound's context (scenario, arm, constants, bound, memo) and how far the search looks
def take_over(
    r: Resolved,
    arm: str,
    c: StepConstants,
    base: StepBound,
    memo: dict[Any, Any] | None = None,
    max_factor: float = MAX_FACTOR,
) -> TakeOver | None:
    """The smallest load above this one at which the bound changes (to `TOLERANCE`), or None
    within `max_factor`.

    Each of the bound's leads (`leads_us`) is near linear in the load between changes of regime,
    so the first to reach zero is estimated from the two latest loads (extrapolated before a
    change is seen, interpolated across the bracket once one is), and the model is probed just
    past that estimate, then just short of it: most searches take three or four evaluations.
    Halving the bracket (in ratio) takes over when an estimate fails to halve it: a lead jumps
    where one pipe of the exchange takes over from another. The pieces of a step that do not
    move with the load (the prefill device time) are reused from `memo`.
    """
    name = bound_name(base)
    cpu = on_cpu_path(base, name)
    n0 = max(round(running_sequences(r, arm, memo)), 1)
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    serving = float(lay.ranks) * float(lay.groups) if lay.data_parallel else 1.0
    top = int(min(n0 * max_factor, LIMITS["concurrency"], LIMITS["max_batch"] * serving))
    if top <= n0:
        return None
    steady = (("prefill", placement(arm)), ("collective latency", arm))  # what the load leaves as it is
    seed = {k: v for k, v in (memo or {}).items() if k in steady}
    seen: dict[int, list[float]] = {n0: leads_us(base, name, cpu)}
    lo, prev, hi, at_hi = n0, n0, 0, ""
    n = min(8 * n0, top)
    evaluations, side, streak, widths = 0, "", 0, []
    while evaluations < _MAX_EVALUATIONS:
        b = _at(r, arm, c, n, seed)
        evaluations += 1
        there = bound_name(b)
        seen[n] = leads_us(b, name, cpu)
        moved = "lo" if there == name else "hi"
        streak = streak + 1 if moved == side else 1
        side = moved
        if moved == "lo":
            prev, lo = lo, n
        else:
            hi, at_hi = n, there
        if hi and hi - lo <= max(1, int(lo * TOLERANCE)):
            return TakeOver(hi, hi / n0, at_hi, evaluations)
        if not hi and lo >= top:
            return None
        if hi:
            widths.append(hi / lo)
        # a lead that jumps (a pipe of the exchange taking over) misleads the secant: halve the
        # bracket, in ratio, when the last probe did not halve it
        slow = len(widths) >= 2 and widths[-1] - 1.0 > (widths[-2] - 1.0) / 2.0
        n = _next_load(seen, prev, lo, hi, top, side, 2 if slow else streak)
    return TakeOver(hi, hi / n0, at_hi, evaluations) if hi else None


# size: the secant search's state (probes seen, bracket, last side, streak) it reads once per probe
def _next_load(
    seen: dict[int, list[float]], prev: int, lo: int, hi: int, top: int, side: str, streak: int
) -> int:
    """The next load to probe. Before a change is seen: just past where the first lead is
    extrapolated to reach zero (four times further when none falls). Once one is: the first
    lead's root across the bracket, probed just short of it after the upper end moved and just
    past it after the lower end did, so two good estimates close the bracket; the middle after
    two probes that moved the same end or one that did not halve the bracket (`streak` 2)."""
    if not hi:
        a, b = seen[prev], seen[lo]
        roots = [
            lo + gb * (lo - prev) / (ga - gb) for ga, gb in zip(a, b, strict=True) if lo > prev and gb < ga
        ]
        root = min(roots, default=lo * 4.0)
        return min(max(int(ceil(root * (1 + TOLERANCE / 2))), lo + 1), top)
    if streak >= 2:
        return min(max(int((lo * hi) ** 0.5), lo + 1), hi - 1)
    a, b = seen[lo], seen[hi]
    roots = [lo + ga * (hi - lo) / (ga - gb) for ga, gb in zip(a, b, strict=True) if ga > 0 >= gb]
    root = min(roots, default=(lo + hi) / 2.0)
    short, past = int(root * (1 - TOLERANCE / 4)), int(ceil(root * (1 + TOLERANCE / 4)))
    return min(max(short if side == "hi" else past, lo + 1), hi - 1)
