"""The least-squares solver of one transport's cross-node kernel constants.

A transport's references become `Terms` (each figure's computed pipes at its shape, instance
and lanes), and `solve` finds the latency of leaving the node, the cost per message and the
signal ratio that minimise the squared log error of every published figure (`fit/kernels.py`
says which of them a transport's references can pin). The loss is written on arrays so one
call scores a whole grid of one constant: a cross-validation runs ~10^5 of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..catalog.hardware import get_instance
from ..catalog.transports import KernelRef, Transport
from ..physics.deepep import KernelShape, issue_lanes, messages, nvlink_bw, scaleout_bw
from .table import NvlinkFit

MAX_SIGNAL_RATIO = 4.0  # a signal costs at most this many puts in the search


def shape_of(ref: KernelRef) -> KernelShape:
    return KernelShape(ref.tokens, ref.hidden, ref.topk, ref.experts, ref.dispatch_dtype)


@dataclass(frozen=True)
class Terms:
    """What one reference's figures are made of, computed once per fit (us, at its instance)."""

    ref: KernelRef
    factor: float
    local: float  # the library's one-node fixed part, per direction
    data: float  # data messages, x reference lanes / the row's lanes
    signals: float  # signal messages, the same
    wire_d: float
    wire_c: float
    nvl_d: float
    nvl_c: float

    def direction(self, leaving: float, beta: float, ratio: float, combine: bool) -> float:
        wire, nvl = (self.wire_c, self.nvl_c) if combine else (self.wire_d, self.nvl_d)
        f = self.factor
        return f * self.local + max(f * leaving, wire, nvl, f * beta * (self.data + ratio * self.signals))


def terms(t: Transport, ref: KernelRef, nvlink: NvlinkFit, factor: float, ref_lanes: float) -> Terms:
    """One reference's pipes, computed from its shape, instance and lanes (no constant fitted)."""
    inst = get_instance(ref.instance)
    gpn = inst.gpus_per_node
    shape = shape_of(ref)
    m = messages(ref.ep, gpn, shape, ref.prefill)
    bw = scaleout_bw(t, inst, gpn, ref.comms, ref.prefill).scalar
    nvl = nvlink_bw(inst, nvlink.efficiency).scalar
    data, signals, ns = (float(np.asarray(v)) for v in (m.data, m.signals, m.nvlink_sel))
    scale = ref_lanes / float(np.asarray(issue_lanes(t, ref.comms, ref.qps)))
    d_b, c_b = shape.dispatch_bytes_per_token, shape.combine_bytes_per_token
    local = nvlink.alpha_us.scalar / 2
    return Terms(
        ref,
        factor,
        local,
        data * scale,
        signals * scale,
        data * d_b / bw / 1e3,
        data * c_b / bw / 1e3,
        ns * d_b / nvl / 1e3,
        ns * c_b / nvl / 1e3,
    )


Params = tuple[tuple[float, float], tuple[float, float], float]  # (leaving D / C, beta D / C, ratio)


def figures(x: Terms, p: Params) -> list[tuple[float, float]]:
    """(model, published) for each figure a reference states."""
    (l_d, l_c), (b_d, b_c), ratio = p
    d = x.direction(l_d, b_d, ratio, False)
    c = x.direction(l_c, b_c, ratio, True)
    ref = x.ref
    if ref.total_us is not None:
        return [(d + c, ref.total_us)]
    assert ref.dispatch_us is not None
    if ref.combine_us is None:
        return [(d, ref.dispatch_us)]
    return [(d, ref.dispatch_us), (c, ref.combine_us)]


class Problem:
    """The log loss of a transport's references as arrays, so a search evaluates a whole grid of
    one constant at once (the fits run ~10^5 such evaluations in a cross-validation)."""

    def __init__(self, terms: Sequence[Terms]) -> None:
        def col(get: Callable[[Terms], float | None]) -> np.ndarray:
            return np.array([np.nan if get(x) is None else get(x) for x in terms], dtype=float)

        self.f, self.local = col(lambda x: x.factor), col(lambda x: x.local)
        self.data, self.sig = col(lambda x: x.data), col(lambda x: x.signals)
        self.wd, self.wc = col(lambda x: x.wire_d), col(lambda x: x.wire_c)
        self.nd, self.nc = col(lambda x: x.nvl_d), col(lambda x: x.nvl_c)
        self.total = col(lambda x: x.ref.total_us)
        self.d = col(lambda x: x.ref.dispatch_us if x.ref.total_us is None else None)
        self.c = col(lambda x: x.ref.combine_us if x.ref.total_us is None else None)
        self.has_total, self.has_c = ~np.isnan(self.total), ~np.isnan(self.c)
        self.total, self.d, self.c = (np.where(np.isnan(a), 1.0, a) for a in (self.total, self.d, self.c))

    def loss(self, ld: Any, lc: Any, bd: Any, bc: Any, r: Any) -> Any:
        """Sum of squared log errors; any constant may be a column (a grid) to broadcast."""
        f = self.f
        msgs = self.data + r * self.sig
        d = f * self.local + np.maximum(np.maximum(f * ld, f * bd * msgs), np.maximum(self.wd, self.nd))
        c = f * self.local + np.maximum(np.maximum(f * lc, f * bc * msgs), np.maximum(self.wc, self.nc))
        both = np.log((d + c) / self.total) ** 2
        split = np.log(d / self.d) ** 2 + np.where(self.has_c, np.log(c / self.c) ** 2, 0.0)
        return np.where(self.has_total, both, split).sum(axis=-1)


GRID = 81  # points of each grid; four nested grids fix a constant to ~2e-7 of its range


def minimise(fn: Callable[[Any], Any], lo: float, hi: float, log: bool) -> float:
    """The minimum of `fn` on [lo, hi] by four nested grids, each between the best point's
    neighbours of the last (one vectorised call per grid); on a log scale for latencies and
    costs. Deterministic: a fixed number of evaluations fixes the precision."""
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    for _ in range(4):
        grid = np.linspace(a, b, GRID)
        j = int(np.argmin(fn((np.exp(grid) if log else grid)[:, None])))
        a, b = grid[max(j - 1, 0)], grid[min(j + 1, GRID - 1)]
    best = float(grid[j])
    return math.exp(best) if log else best


def solve(
    terms: Sequence[Terms], fixed: tuple[float, float] | None, ratio: float | None, one_way: float = 0.5
) -> Params:
    """(leaving D / C, beta D / C, signal ratio) minimising the log loss. With `fixed` (leaving)
    and `ratio` given, beta alone: a reference at one token count cannot tell them apart. A free
    leaving latency is never below `one_way`, the fabric's one-way small-message latency.

    Coordinate descent: each constant on nested grids (log grids for latencies and costs, a
    linear one for the ratio, which may be 0)."""
    pb = Problem(terms)
    free = fixed is None
    ld, lc = fixed if fixed is not None else (60.0, 60.0)
    p = [ld, lc, 0.2, 0.2, ratio if ratio is not None else 1.0]  # the order of Problem.loss
    searches = [(2, 1e-4, 50.0, True), (3, 1e-4, 50.0, True)]
    if free:
        searches += [(0, one_way, 800.0, True), (1, one_way, 800.0, True)]
    if ratio is None:
        searches.append((4, 0.0, MAX_SIGNAL_RATIO, False))
    for _ in range(8 if free else 4):
        for i, lo, hi, log in searches:
            p[i] = minimise(partial(_one, pb, tuple(p), i), lo, hi, log)
    return (p[0], p[1]), (p[2], p[3]), p[4]


def _one(pb: Problem, p: tuple[float, ...], i: int, v: Any) -> Any:
    """The loss with constant `i` set to `v` (a grid column or a value), the others as in `p`."""
    return pb.loss(*p[:i], v, *p[i + 1 :])


def exact_betas(x: Terms, leaving: tuple[float, float], ratio: float) -> tuple[float, float]:
    """The costs per message that make one reference's figures exact where the issue path can
    reach them (closed form: each direction is linear in beta once the issue path binds); a
    figure below what its other pipes already take leaves the issue path at that floor."""
    f, msgs = x.factor, x.data + ratio * x.signals
    ref = x.ref

    def solve(t: float, leave: float, wire: float, nvl: float) -> float:
        floor = max(f * leave, wire, nvl)
        return max(t - f * x.local, floor) / (f * max(msgs, 1e-12))

    if ref.total_us is None:
        assert ref.dispatch_us is not None
        b_d = solve(ref.dispatch_us, leaving[0], x.wire_d, x.nvl_d)
        b_c = b_d if ref.combine_us is None else solve(ref.combine_us, leaving[1], x.wire_c, x.nvl_c)
        return b_d, b_c
    lo, hi = 0.0, max(ref.total_us, 1.0) / (f * max(msgs, 1e-12))  # one beta for both: their sum
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        total = x.direction(leaving[0], mid, ratio, False) + x.direction(leaving[1], mid, ratio, True)
        lo, hi = (mid, hi) if total < ref.total_us else (lo, mid)
    return 0.5 * (lo + hi), 0.5 * (lo + hi)
