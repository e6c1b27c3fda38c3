"""Request rate -> running sequences, by Little's law, for every configuration at once.

A server fed R requests per second holds, in steady state, N = R x (time one request spends
in it) sequences. With the model's figures at N running sequences (no queue yet),

    service(N) = TTFT(N) + (OSL - 1) x step(N)         (physics/serving.py, per request)
    N          = R x service(N)                        (Little's law: a fixed point in N)

N is a whole number of sequences: the answer is the least N with N >= R x service(N). The
engine cannot run more than N_max = min(its batch limit over the arm's ranks, what fits in
HBM); when R x service(N_max) > N_max, requests arrive faster than they finish at the batch
limit and the queue grows without bound, so the configuration cannot sustain the rate: it
is marked so instead of being given a latency.

The solve is vectorised and needs few passes: the first evaluates every row at a ladder of
concurrencies 1, 2, 4, ... N_max at once (candidates are extra rows of the same pass), which
brackets the root; each further pass evaluates a dozen candidates inside the bracket, placed
around the false-position estimate, which closes it to one sequence in one or two passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .space import Search

RUNGS_PER_DOUBLING = 1  # the first pass's ladder: N = 1, 2, 4, ... N_max
AROUND = np.arange(-4.0, 5.0)  # candidates either side of the false-position estimate
SPREAD = 12  # and evenly through the bracket, in case the estimate is off
MAX_REFINES = 12


@dataclass
class RateSolution:
    concurrency: np.ndarray  # N per row: the solution, or N_max where the rate is not sustainable
    sustainable: np.ndarray  # bool per row
    max_rate_per_s: np.ndarray  # requests / s the row serves at its batch limit (0 when nothing fits)
    passes: int  # vectorised evaluations of the whole search


def service_ms(ttft_ms: np.ndarray, step_ms: np.ndarray, osl: int) -> np.ndarray:
    """Time one request spends in the server at N running sequences (no queue below the cap)."""
    return ttft_ms + (osl - 1.0) * step_ms


class _Bracket(NamedTuple):
    """Per row, the largest N known to fall short of the load and the smallest known to hold
    it, with their residuals N - R x service(N)."""

    lo: np.ndarray
    f_lo: np.ndarray
    hi: np.ndarray
    f_hi: np.ndarray


def solve(
    search: Search, rate_per_s: float, osl: int, tick: Callable[[], None] | None = None
) -> RateSolution:
    """N per row with N = R x service(N); rows that cannot keep up are marked unsustainable."""
    r = rate_per_s / 1000.0  # requests per ms
    n_max, fits = search.capacity()
    n_max = np.where(fits, np.maximum(n_max, 1.0), 1.0)
    passes = 0

    def residual(cands: np.ndarray, only: np.ndarray) -> np.ndarray:
        """N - R x service(N) for each candidate N (>= 0: N holds the load)."""
        nonlocal passes
        passes += 1
        ev = search.evaluate_rows(cands, only=only, tick=tick)
        return cands - r * service_ms(ev["ttft_ms"], ev["step_ms"], osl)

    ladder = _ladder(n_max)
    f = residual(ladder, fits)
    with np.errstate(divide="ignore", invalid="ignore"):
        max_rate = np.where(fits, n_max / ((n_max - f[:, -1]) / r) * 1000.0, 0.0)
    sustainable = fits & (f[:, -1] >= 0)
    b = _first_bracket(ladder, f, sustainable, n_max)
    for _ in range(MAX_REFINES):
        open_ = sustainable & (b.hi - b.lo > 1)
        if not open_.any():
            break
        cands = _candidates(b)
        b = _narrow(b, cands, residual(cands, open_), open_)
    final = np.where(sustainable, b.hi, n_max)
    search.evaluate_rows(final, write=True, tick=tick)
    return RateSolution(final, sustainable, max_rate, passes + 1)


def _ladder(n_max: np.ndarray) -> np.ndarray:
    """The first pass's candidates per row: 1, 2, 4, ... capped at the row's N_max, N_max last."""
    count = max(1, math.ceil(math.log2(max(float(n_max.max()), 1.0)) * RUNGS_PER_DOUBLING) + 1)
    rungs = np.unique(np.ceil(2.0 ** (np.arange(count) / RUNGS_PER_DOUBLING)))
    ladder = np.minimum(rungs[None, :], n_max[:, None])
    ladder[:, -1] = n_max
    return ladder


def _first_bracket(ladder: np.ndarray, f: np.ndarray, sustainable: np.ndarray, n_max: np.ndarray) -> _Bracket:
    """The ladder's rungs either side of the first that holds the load (sustainable rows)."""
    first = np.argmax(f >= 0, axis=1)
    rows = np.arange(ladder.shape[0])
    hi = np.where(sustainable, ladder[rows, first], n_max)
    f_hi = np.where(sustainable, f[rows, first], 0.0)
    below = np.maximum(first - 1, 0)
    lo = np.where(first > 0, ladder[rows, below], 0.0)
    f_lo = np.where(first > 0, f[rows, below], -1.0)
    return _Bracket(lo, f_lo, hi, f_hi)


def _candidates(b: _Bracket) -> np.ndarray:
    """Whole N inside each bracket: around the false-position estimate and evenly through it."""
    lo, f_lo, hi, f_hi = b
    with np.errstate(divide="ignore", invalid="ignore"):
        x = lo + (hi - lo) * (-f_lo) / (f_hi - f_lo)  # false position: linear between the ends
    x = np.where(np.isfinite(x), x, (lo + hi) / 2.0)
    around = np.ceil(x)[:, None] + AROUND
    spread = lo[:, None] + (hi - lo)[:, None] * np.linspace(0, 1, SPREAD + 2)[1:-1]
    return np.sort(
        np.clip(
            np.concatenate([around, np.round(spread)], axis=1),
            lo[:, None] + 1,
            np.maximum(hi - 1, lo + 1)[:, None],
        ),
        axis=1,
    )


def _narrow(b: _Bracket, cands: np.ndarray, f: np.ndarray, open_: np.ndarray) -> _Bracket:
    """The bracket closed onto the smallest candidate that holds and the largest below it that fails."""
    lo, f_lo, hi, f_hi = b
    rows = np.arange(cands.shape[0])
    holds = open_[:, None] & (f >= 0)
    any_hold = holds.any(axis=1)
    j = np.argmax(holds, axis=1)
    new_hi = np.where(any_hold, cands[rows, j], hi)
    new_f_hi = np.where(any_hold, f[rows, j], f_hi)
    fails = open_[:, None] & (f < 0) & (cands < new_hi[:, None])
    any_fail = fails.any(axis=1)
    k = cands.shape[1] - 1 - np.argmax(fails[:, ::-1], axis=1)  # the largest failing candidate
    lo = np.where(any_fail, np.maximum(lo, cands[rows, k]), lo)
    f_lo = np.where(any_fail, f[rows, k], f_lo)
    return _Bracket(lo, f_lo, np.where(open_, new_hi, hi), np.where(open_, new_f_hi, f_hi))
