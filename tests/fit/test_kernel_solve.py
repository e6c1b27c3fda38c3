"""The least-squares solver of one transport's cross-node kernel constants (`fit/kernel_solve.py`).

Per direction, `t = f × local + max(f × leaving, wire, NVLink, f × beta × (data + r × signals))`
(physics/deepep.py), scored by the squared log error of every published figure. The pieces are
checked on hand-made `Terms`, and the solver on figures generated from known constants.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from deepep_calc.base.quantity import Q
from deepep_calc.catalog.transports import KernelRef, get_transport
from deepep_calc.fit.kernel_solve import (
    Problem,
    Terms,
    exact_betas,
    figures,
    minimise,
    shape_of,
    solve,
    terms,
)
from deepep_calc.fit.table import NvlinkFit

# DeepSeek's shape at 128 tokens per rank, EP16 over 2 × p5en (8 GPUs, 50 GB/s of EFA per GPU,
# NVLink 450 GB/s per direction).
REF = KernelRef(instance="p5en", ep=16, comms=8, qps=6, dispatch_us=300.0, combine_us=500.0, source="hand")
# A GPU-initiated transport with 2 issue lanes at half the line rate: 25 GB/s per GPU.
GPU = get_transport("efa-gda").copy(**{"issue_lanes": 2, "wire_efficiency": 0.5})
NVL = NvlinkFit(Q.derived(30.0, "us", "hand"), Q.derived(0.5, "", "hand"))
PARAMS = ((20.0, 10.0), (0.5, 0.25), 0.5)  # leaving D / C, beta D / C, signal ratio


def ref(**changes: Any) -> KernelRef:
    return REF.copy(**changes)


def hand_terms(data: float, figures_: dict[str, float], **changes: float) -> Terms:
    """Factor 1, local 10 us, 16 signals, no wire or NVLink time: only the fixed part and the
    issue path compete."""
    base = {"factor": 1.0, "local": 10.0, "data": data, "signals": 16.0}
    base.update(changes)
    r = ref(**{"dispatch_us": None, "combine_us": None, "total_us": None, **figures_})
    return Terms(r, base["factor"], base["local"], base["data"], base["signals"], 0.0, 0.0, 0.0, 0.0)


def test_the_shape_of_a_reference() -> None:
    s = shape_of(ref(tokens=4, hidden=4096, topk=6, experts=384, dispatch_dtype="bf16"))
    assert (s.tokens, s.hidden, s.topk, s.experts, s.dispatch_dtype) == (4, 4096, 6, 384, "bf16")


def test_a_references_pipes_by_hand() -> None:
    """128 × 8 = 1,024 selections, half remote: 512 data messages and 256 / 2 = 128 signals, 448
    to the 7 peers of the node (1,024 × 7/16). The row's 2 lanes against 4 reference lanes: ×2,
    so 1,024 and 256 messages. Wire at 25 GB/s: 512 × 7,408 B = 151.71584 us out, 512 × 14,336 B
    = 293.60128 us back; NVLink at 450 × 0.5 = 225 GB/s: 448 × 7,408 / 225 = 14.7502 us and
    448 × 14,336 / 225 = 28.5446 us. Local = 30 / 2 = 15."""
    x = terms(GPU, REF, NVL, 1.5, 4.0)
    assert (x.factor, x.local, x.data, x.signals) == (1.5, 15.0, 1024.0, 256.0)
    assert x.wire_d == pytest.approx(151.71584, rel=1e-13) and x.wire_c == pytest.approx(293.60128, rel=1e-13)
    assert x.nvl_d == pytest.approx(448 * 7408 / 225e3, rel=1e-13)
    assert x.nvl_c == pytest.approx(448 * 14336 / 225e3, rel=1e-13)


def test_each_direction_is_local_plus_the_slowest_pipe() -> None:
    """Dispatch: 1.5 × 15 + max(1.5 × 20, 151.7, 14.8, 1.5 × 0.5 × (1,024 + 0.5 × 256)) =
    22.5 + 864 = 886.5; combine: 22.5 + max(15, 293.6, 28.5, 432) = 454.5. With a larger
    leaving latency (700 us) the fixed part gates dispatch: 22.5 + 1,050."""
    x = terms(GPU, REF, NVL, 1.5, 4.0)
    assert x.direction(20.0, 0.5, 0.5, combine=False) == pytest.approx(886.5, rel=1e-13)
    assert x.direction(10.0, 0.25, 0.5, combine=True) == pytest.approx(454.5, rel=1e-13)
    assert x.direction(700.0, 0.5, 0.5, combine=False) == pytest.approx(1072.5, rel=1e-13)
    assert x.direction(0.0, 0.0, 0.0, combine=True) == pytest.approx(22.5 + 293.60128, rel=1e-13)


def test_figures_pair_the_model_with_what_the_reference_states() -> None:
    """Dispatch and combine where both are published; their sum against a total; dispatch alone
    for a dispatch-only row."""
    x = terms(GPU, REF, NVL, 1.5, 4.0)
    both = figures(x, PARAMS)
    assert [m for m, _ in both] == pytest.approx([886.5, 454.5], rel=1e-13)
    assert [p for _, p in both] == [300.0, 500.0]
    total = figures(replace(x, ref=ref(dispatch_us=None, combine_us=None, total_us=1000.0)), PARAMS)
    assert total == [(pytest.approx(1341.0, rel=1e-13), 1000.0)]
    alone = figures(replace(x, ref=ref(combine_us=None)), PARAMS)
    assert alone == [(pytest.approx(886.5, rel=1e-13), 300.0)]


def test_the_loss_is_the_sum_of_squared_log_errors() -> None:
    """Over three rows (both directions, a total, dispatch alone) the loss is Σ log(model /
    published)² over every figure; a column of one constant scores each value of the grid."""
    x = terms(GPU, REF, NVL, 1.5, 4.0)
    rows = [
        x,
        replace(x, ref=ref(dispatch_us=None, combine_us=None, total_us=1000.0)),
        replace(x, ref=ref(combine_us=None)),
    ]
    want = sum(math.log(m / p) ** 2 for row in rows for m, p in figures(row, PARAMS))
    pb = Problem(rows)
    assert pb.loss(20.0, 10.0, 0.5, 0.25, 0.5) == pytest.approx(want, rel=1e-12)
    grid = pb.loss(20.0, 10.0, np.array([[0.5], [0.25]]), 0.25, 0.5)
    slower = sum(
        math.log(m / p) ** 2 for row in rows for m, p in figures(row, ((20.0, 10.0), (0.25, 0.25), 0.5))
    )
    assert grid.tolist() == pytest.approx([want, slower], rel=1e-12)


def test_minimise_by_nested_grids_on_a_linear_or_log_scale() -> None:
    """|v − 3.7| on [0, 10] linear and |log v − log 5| on [0.01, 100] on a log scale: four grids
    of 81 points pin each to within a few millionths of the range."""

    def vee(centre: float, log: bool) -> Any:
        def fn(v: np.ndarray) -> np.ndarray:
            d = np.log(v) - math.log(centre) if log else v - centre
            return np.abs(d).sum(axis=-1)

        return fn

    assert minimise(vee(3.7, False), 0.0, 10.0, log=False) == pytest.approx(3.7, abs=1e-5)
    assert minimise(vee(5.0, True), 0.01, 100.0, log=True) == pytest.approx(5.0, rel=1e-5)


def generated(data: float, truth: tuple[tuple[float, float], tuple[float, float], float]) -> Terms:
    """A row whose dispatch and combine are the model's at `truth`."""
    x = hand_terms(data, {"dispatch_us": 1.0, "combine_us": 1.0})
    d, c = (m for m, _ in figures(x, truth))
    return replace(x, ref=ref(dispatch_us=d, combine_us=c))


TRUTH = ((40.0, 30.0), (0.5, 0.25), 1.0)


def test_solve_gives_back_the_constants_that_made_the_figures() -> None:
    """Rows at 4, 32, 128 and 512 data messages (16 signals each): the two small ones pin the
    leaving latencies (50 and 40 us), the two large ones the cost per message and the signal
    ratio (0.5 × (128 + 16 r) = 72 and 0.5 × (512 + 16 r) = 264 give r = 1)."""
    rows = [generated(d, TRUTH) for d in (4.0, 32.0, 128.0, 512.0)]
    (ld, lc), (bd, bc), r = solve(rows, None, None, one_way=0.5)
    assert [ld, lc, bd, bc, r] == pytest.approx([40.0, 30.0, 0.5, 0.25, 1.0], rel=1e-4)


def test_solve_with_the_leaving_latency_and_ratio_given_fits_the_costs_alone() -> None:
    rows = [generated(d, TRUTH) for d in (128.0, 512.0)]
    leaving, (bd, bc), r = solve(rows, (40.0, 30.0), 1.0)
    assert leaving == (40.0, 30.0) and r == 1.0
    assert [bd, bc] == pytest.approx([0.5, 0.25], rel=1e-5)


def test_a_free_leaving_latency_never_falls_below_the_one_way_latency() -> None:
    """Rows the issue path sets throughout say nothing of the fixed part: it stays at or above
    the fabric's one-way latency (here 25 us, to the rounding of exp(log 25)), never drifting to 0."""
    rows = [generated(d, ((5.0, 5.0), (0.5, 0.25), 1.0)) for d in (128.0, 512.0)]
    (ld, lc), _, _ = solve(rows, None, None, one_way=25.0)
    assert min(ld, lc) >= 25.0 * (1 - 1e-12)


def test_exact_costs_per_message_where_the_issue_path_binds() -> None:
    """100 data messages, no signals, local 10: dispatch 60 = 10 + 100 β → β = 0.5; combine 35
    → 0.25. A dispatch of 25 is below what leaving the node (20) already takes after local:
    β sits at that floor, 20 / 100 = 0.2. A dispatch-only row gives both directions its β."""
    x = hand_terms(100.0, {"dispatch_us": 60.0, "combine_us": 35.0}, signals=0.0)
    assert exact_betas(x, (20.0, 10.0), 0.0) == pytest.approx((0.5, 0.25), rel=1e-13)
    floor = hand_terms(100.0, {"dispatch_us": 25.0, "combine_us": 35.0}, signals=0.0)
    assert exact_betas(floor, (20.0, 10.0), 0.0)[0] == pytest.approx(0.2, rel=1e-13)
    alone = hand_terms(100.0, {"dispatch_us": 60.0}, signals=0.0)
    assert exact_betas(alone, (20.0, 10.0), 0.0) == pytest.approx((0.5, 0.5), rel=1e-13)


def test_one_cost_per_message_for_a_published_total() -> None:
    """A total of 120 us: 10 + max(20, 100 β) + 10 + max(10, 100 β) = 120 at β = 0.5, found by
    bisection and shared by both directions. Signals count at their ratio: with 20 signals at
    0.5 puts, 110 messages: 20 + 220 β = 120 → β = 100 / 220."""
    x = hand_terms(100.0, {"total_us": 120.0}, signals=0.0)
    bd, bc = exact_betas(x, (20.0, 10.0), 0.0)
    assert bd == bc == pytest.approx(0.5, rel=1e-12)
    with_signals = hand_terms(100.0, {"total_us": 120.0}, signals=20.0)
    assert exact_betas(with_signals, (20.0, 10.0), 0.5)[0] == pytest.approx(100.0 / 220.0, rel=1e-12)
