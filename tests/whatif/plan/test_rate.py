"""Request rate -> running sequences by Little's law (`whatif/plan/rate.py`): it holds at the
solution and in every row, and a rate no configuration sustains is marked, not given a latency."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif.plan.rate import service_ms, solve
from deepep_calc.whatif.plan.search import plan_request, run_plan

from .small import SMALL

RATE = dict(SMALL, concurrency=None, request_rate=4.0, ttft_ms=None)


@pytest.fixture(scope="module")
def rate_plan():
    return run_plan(plan_request(**RATE))


def _service_ms(p: Any, osl: int) -> float:
    f = p.to_json()
    return f["ttft_ms"]["value"] + (osl - 1) * 1000.0 / f["per_user_tok_s"]["value"]


def test_littles_law_holds_at_the_solution(rate_plan):
    points = [rate_plan.best, *rate_plan.frontier]
    assert rate_plan.best is not None
    r = RATE["request_rate"] / 1000.0
    for p in points:
        n = p.config["concurrency"]
        load = r * _service_ms(p, RATE["osl"])
        assert p.sustainable
        assert load <= n < load + 1.0 + 1e-9, (p.label, n, load)  # N = R x service, to one sequence
        # the least such N: one sequence fewer cannot hold the load
        if n > 1:
            fewer = dict(p.config, concurrency=n - 1)
            a = compute(resolve(Scenario(**fewer))).arms[p.arm]
            service = float(a.ttft_ms.value) + (RATE["osl"] - 1) * float(a.step_ms.value)
            assert n - 1 < r * service


def test_every_row_of_the_rate_search_satisfies_littles_law(rate_plan):
    s = rate_plan.scan
    v = s.search.rows.values
    n = s.search.rows.concurrency
    load = RATE["request_rate"] / 1000.0 * (v["ttft_ms"] + (RATE["osl"] - 1) * v["step_ms"])
    ok = s.rate.sustainable
    assert ok.sum() > 100
    assert np.all(n[ok] >= load[ok] - 1e-9) and np.all(n[ok] < load[ok] + 1.0 + 1e-9)
    assert np.all(s.rate.max_rate_per_s[ok] >= RATE["request_rate"] * (1 - 1e-9))
    assert np.all(s.rate.max_rate_per_s[~ok] < RATE["request_rate"])


@pytest.mark.slow
def test_an_unsustainable_rate_is_marked_not_given_a_latency():
    p = run_plan(plan_request(**dict(RATE, request_rate=50_000.0, slo_tok_s=None)))
    assert p.best is None
    assert p.nearest_misses and not p.frontier
    for m in p.nearest_misses:
        data = m.to_json()
        assert data["sustainable"] is False and data["meets_targets"] is False
        assert data["ttft_ms"]["value"] is None  # no steady state, so no TTFT
        assert any("req/s" in text for text in data["misses"])
        assert data["max_request_rate"]["value"] < 50_000.0
    assert p.changes and p.changes[0].startswith("lower --request-rate to ")
    lowered = float(p.changes[0].rsplit(" ", 1)[1])
    again = run_plan(plan_request(**dict(RATE, request_rate=lowered, slo_tok_s=None)))
    assert again.best is not None and again.best.sustainable  # the suggested change works


# On a search whose figures are known in closed form --------------------------------------------


class LinearSearch:
    """A stand-in for `space.Search` whose rows have TTFT `ttft` ms and a step of `step + slope x N`
    ms at N running sequences, at most `n_max` of them (none where `fits` is False). It answers
    only the rows asked (`only`), as the real search leaves the others unevaluated."""

    def __init__(
        self, ttft: list[float], step: list[float], slope: list[float], n_max: list[float], fits: list[bool]
    ):
        self.ttft, self.step, self.slope = np.array(ttft), np.array(step), np.array(slope)
        self.n_max, self.fits = np.array(n_max), np.array(fits)
        self.calls = 0
        self.written: np.ndarray | None = None

    def capacity(self) -> tuple[np.ndarray, np.ndarray]:
        return self.n_max.copy(), self.fits.copy()

    def evaluate_rows(self, concurrency, only=None, write=False, tick=None) -> dict[str, np.ndarray]:
        self.calls += 1
        conc = np.asarray(concurrency, dtype=float)
        if conc.ndim == 1:
            conc = conc[:, None]
        ttft = np.broadcast_to(self.ttft[:, None], conc.shape).copy()
        step = self.step[:, None] + self.slope[:, None] * conc
        if only is not None:
            ttft[~only], step[~only] = np.nan, np.nan
        if write:
            self.written = conc[:, 0].copy()
        if tick is not None:
            tick()
        return {"ttft_ms": ttft, "step_ms": step}


def least_n(rate_per_s: float, ttft: float, step: float, slope: float, osl: int, n_max: float) -> int | None:
    """Little's law by counting: the least whole N with N >= R x (TTFT + (OSL - 1) x step(N))."""
    r = rate_per_s / 1000.0
    for n in range(1, int(n_max) + 1):
        if n >= r * (ttft + (osl - 1) * (step + slope * n)):
            return n
    return None


def test_service_is_the_first_token_then_a_step_per_further_token() -> None:
    """100 ms to the first token and 101 - 1 further tokens at 10 ms: 1,100 ms."""
    np.testing.assert_array_equal(
        service_ms(np.array([100.0, 0.0]), np.array([10.0, 2.0]), 101), [1100.0, 200.0]
    )


def test_solve_finds_the_least_n_that_holds_the_rate_and_marks_what_cannot() -> None:
    """20 req/s, OSL 101. Row 0: service 100 + 100 x (10 + 0.01 N) = 1,100 + N ms, so N >= 0.02
    x (1,100 + N), N >= 22.45: 23. Row 1: TTFT 4,990 ms and a flat 1 ms step: 5,090 ms, N >= 101.8:
    102. Row 2 is row 0 capped at 10 sequences: 10 cannot hold 0.02 x 1,110 = 22.2, and at its
    cap it serves 10 / 1.11 s = 9.01 req/s. Row 3 grows its step by 1 ms per sequence: service
    1,100 + 100 N ms outgrows N at any N; at 5,000 it serves 5,000 / 501.1 s = 9.98 req/s. Row 4
    fits nothing: no rate at all."""
    search = LinearSearch(
        ttft=[100.0, 4990.0, 100.0, 100.0, 100.0],
        step=[10.0, 1.0, 10.0, 10.0, 10.0],
        slope=[0.01, 0.0, 0.01, 1.0, 0.01],
        n_max=[1000.0, 1000.0, 10.0, 5000.0, 0.0],
        fits=[True, True, True, True, False],
    )
    ticks: list[None] = []
    out = solve(search, 20.0, 101, lambda: ticks.append(None))  # type: ignore[arg-type]
    assert least_n(20.0, 100.0, 10.0, 0.01, 101, 1000) == 23
    assert least_n(20.0, 4990.0, 1.0, 0.0, 101, 1000) == 102
    assert least_n(20.0, 100.0, 10.0, 0.01, 101, 10) is None
    assert out.sustainable.tolist() == [True, True, False, False, False]
    assert out.concurrency[:2].tolist() == [23.0, 102.0]
    assert out.concurrency[2:].tolist() == [10.0, 5000.0, 1.0]  # the cap where the rate is not held
    np.testing.assert_allclose(out.max_rate_per_s[2:4], [10 / 1.11, 5000 / 501.1], rtol=1e-12)
    assert out.max_rate_per_s[4] == 0.0
    assert np.all(out.max_rate_per_s[:2] >= 20.0)
    assert search.written is not None and search.written.tolist() == out.concurrency.tolist()
    assert out.passes == search.calls  # every evaluation of the search is counted
    assert len(ticks) == search.calls  # the progress tick goes to every evaluation


def test_solve_is_exact_to_one_sequence_over_many_rows() -> None:
    """Rows with TTFTs from 10 ms to 10 s and steps from 1 to 50 ms: each solution is the least N
    a count from 1 finds, in a few passes whatever the spread."""
    rng = np.random.default_rng(3)
    rows = 200
    ttft = rng.uniform(10.0, 10_000.0, rows)
    step = rng.uniform(1.0, 50.0, rows)
    slope = rng.uniform(0.0, 0.05, rows)
    search = LinearSearch(list(ttft), list(step), list(slope), [4096.0] * rows, [True] * rows)
    out = solve(search, 7.0, 257)  # type: ignore[arg-type]
    for i in range(rows):
        want = least_n(7.0, ttft[i], step[i], slope[i], 257, 4096)
        if want is None:
            assert not out.sustainable[i]
        else:
            assert out.sustainable[i] and out.concurrency[i] == want, i
    assert out.passes <= 6
