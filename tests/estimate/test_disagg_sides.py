"""estimate/disagg_sides.py: each side of a disaggregated deployment, arm by arm, and choosing.

Hand-worked on DeepSeek-V3, 1P2D on vLLM (64 clients, ISL 1,024, OSL 256): the decode side's
allgather (256 experts over EP16: 16 each) runs 256 sequences per DP rank (vLLM's
max_num_seqs) over 2 x 8 ranks, 4,096 at once, and finishes 4,096 / (256 tokens x its step)
requests per second; the prefill side's TP takes
floor(8,192 budget tokens / 1,024) = 8 prompts per forward on its one lane. The choosing
helpers (`choose`, `gather`, `pick`, `pairing_rank`) are worked on small hand-made lists.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.estimate.disagg_sides import (
    best_ranked,
    candidates,
    choose,
    decode_arm,
    gather,
    gather_values,
    pairing_rank,
    pick,
    plain,
    prefill_arm,
    side_resolved,
    splits_evenly,
)
from deepep_calc.estimate.result import table_for
from deepep_calc.question.scenario import Resolved, resolve


@pytest.fixture(scope="module")
def r() -> Resolved:
    return resolve(
        Scenario(
            model="deepseek-v3",
            prefill_nodes=1,
            decode_nodes=2,
            engine="vllm",
            concurrency=64,
            isl=1024,
            osl=256,
        )
    )


# Sides ----------------------------------------------------------------------------------------


def test_a_side_is_the_scenario_on_its_own_nodes_with_no_split_of_its_own(r: Resolved) -> None:
    """The decode side: 2 nodes over efa-proxy, no disaggregation fields, never a measured cell
    (every cell is an aggregated run), running no prefill; the prefill side's one node rides
    NVLink. A concurrency handed in replaces the scenario's."""
    dec = side_resolved(r, r.disagg.decode)
    assert (dec.scenario.nodes, dec.scenario.transport) == (2.0, "efa-proxy")
    assert dec.scenario.prefill_nodes is None and dec.disagg is None
    assert dec.measured is False and dec.disaggregated is True
    pre = side_resolved(r, r.disagg.prefill, concurrency=8)
    assert (pre.scenario.nodes, pre.transport.name, pre.disaggregated) == (1.0, "nvlink", False)
    assert pre.scenario.concurrency == 8.0 and dec.scenario.concurrency == 64.0


def test_a_side_runs_the_arm_asked_for_else_every_distinct_layout() -> None:
    """On one node a replica is the allgather deployment itself: not a candidate there."""
    assert candidates(SimpleNamespace(arm="tp", nodes=3)) == ("tp",)
    assert candidates(SimpleNamespace(arm=None, nodes=1)) == ("deepep", "allgather", "tp")
    assert candidates(SimpleNamespace(arm=None, nodes=2)) == ("deepep", "allgather", "tp", "replica")


def test_experts_split_evenly_over_the_shard_and_tp_always_splits() -> None:
    """256 experts over EP16: 16 each; 100 over EP16 is not whole; 8 experts over EP16 leave
    ranks without one; TP shards every expert instead."""
    model = SimpleNamespace(model=SimpleNamespace(experts=256))
    assert splits_evenly(model, SimpleNamespace(expert_shard=16), "deepep")
    assert not splits_evenly(
        SimpleNamespace(model=SimpleNamespace(experts=100)), SimpleNamespace(expert_shard=16), "allgather"
    )
    assert not splits_evenly(
        SimpleNamespace(model=SimpleNamespace(experts=8)), SimpleNamespace(expert_shard=16), "deepep"
    )
    assert (
        splits_evenly(
            SimpleNamespace(model=SimpleNamespace(experts=100)), SimpleNamespace(expert_shard=16), "tp"
        )
        is True
    )


def test_plain_drops_the_band_and_keeps_the_rest() -> None:
    q = Q.assumed(10.0, "ms", "model").with_band(8.0, 12.0)
    out = plain(q)
    assert not out.banded and (out.value, out.unit, out.tag, out.source) == (10.0, "ms", Tag.ASSUMED, "model")


def test_the_decode_side_runs_its_batch_limit_and_serves_at_this_load(r: Resolved) -> None:
    rd = side_resolved(r, r.disagg.decode)
    d = decode_arm(rd, "allgather", table_for(r), {})
    assert rd.max_batch == 256 and float(d.layout.dp_ranks) * float(d.layout.groups) == 16.0
    assert d.memory.max_concurrency.scalar > 4096  # the KV cache does not bind here
    assert d.running_limit.scalar == 4096.0 and d.running_limit.unit == "sequences"
    step = d.step_ms.scalar
    assert d.capacity_req_s.scalar == pytest.approx(4096 / (256 * step) * 1000)
    assert d.throughput_req_s.scalar == pytest.approx(64 / (256 * step) * 1000)  # 64 clients running
    assert d.splits and d.fits


def test_the_prefill_side_fills_a_forward_with_whole_prompts(r: Resolved) -> None:
    rp = side_resolved(r, r.disagg.prefill)
    p = prefill_arm(rp, "tp", table_for(r), {})
    assert p.prompts.scalar == 8.0 and float(p.lanes) == 1.0
    assert p.capacity_req_s.scalar == pytest.approx(8 * 1 / p.busy_forward_ms.scalar * 1000)
    assert p.splits is True and bool(p.fits)


# Choosing --------------------------------------------------------------------------------------


def test_choose_takes_the_best_rated_that_can_run() -> None:
    assert choose([3.0, 5.0, 4.0], [True, False, True]) == 2  # 5 cannot run: 4 is the best that can
    assert choose([3.0, 5.0, 4.0], [False, False, False]) == 1  # none can: the best-rated anyway
    assert choose([5.0, 5.0], [True, True]) == 0  # a tie goes to the first


def test_choose_row_by_row_agrees_with_one_scenario() -> None:
    """Row 0: ratings 1, 3, 2 all ok -> 1. Row 1: 5, 2, 9 with the last unable -> 0. Row 2: none
    can run -> the best-rated, 2. A NaN rating never wins."""
    ratings = [np.array([1.0, 5.0, 0.0]), np.array([3.0, 2.0, 1.0]), np.array([2.0, 9.0, np.nan])]
    ok = [np.array([True, True, False]), True, np.array([True, False, False])]
    assert choose(ratings, ok).tolist() == [1, 0, 1]
    for row in range(3):
        one = choose([float(v[row]) for v in ratings], [bool(np.broadcast_to(o, (3,))[row]) for o in ok])
        assert one == int(choose(ratings, ok)[row])


def test_gather_and_pick_take_the_chosen_candidate() -> None:
    a, b = Q.assumed(1.0, "ms", "a"), Q.measured(2.0, "ms", "b")
    assert gather([a, b], 1) is b and pick([a, b], 0) is a
    rows = gather(
        [Q.assumed(np.array([1.0, 2.0]), "ms", "a"), Q.measured(np.array([10.0, 20.0]), "ms", "b")],
        np.array([1, 0]),
    )
    assert rows.value.tolist() == [10.0, 2.0] and rows.tag is Tag.ASSUMED  # the weaker of the two tags
    assert gather_values([7.0, 8.0], 1) == 8.0
    assert pick([np.array([1.0, 2.0]), np.array([3.0, 4.0])], np.array([0, 1])).tolist() == [1.0, 4.0]


def _scored(ok: bool, per_user: float, ttft: float, rate: float, slo: float | None = None) -> tuple:
    s = SimpleNamespace(scenario=SimpleNamespace(slo_tok_s=slo, ttft_ms=None))
    dep = SimpleNamespace(
        per_user_tok_s=Q.assumed(per_user, "tok/s", "t"),
        ttft_ms=Q.assumed(ttft, "ms", "t"),
        throughput_req_s=Q.assumed(rate, "req/s", "t"),
    )
    return pairing_rank(s, {"ok": ok}, {"ok": True}, dep)


def test_a_pairing_is_rated_by_targets_then_running_then_rate_then_first_token() -> None:
    """Meeting a 30 tok/s floor beats a faster pairing that misses it; a pairing that runs beats
    one that does not, whatever its rate; the rate comes before the first token; between equal
    rates of pairings that cannot run, the sooner first token wins."""
    assert _scored(True, 35.0, 500.0, 1.0, slo=30.0) > _scored(True, 25.0, 500.0, 100.0, slo=30.0)
    assert _scored(True, 25.0, 500.0, 1.0) > _scored(False, 25.0, 500.0, 1000.0)
    assert _scored(True, 25.0, 500.0, 6.0) > _scored(True, 25.0, 100.0, 5.0)  # the rate comes first
    assert _scored(False, 25.0, 400.0, 5.0) > _scored(False, 25.0, 500.0, 5.0)


def test_between_running_pairings_of_equal_rate_the_sooner_first_token_wins() -> None:
    assert _scored(True, 25.0, 400.0, 5.0) > _scored(True, 25.0, 500.0, 5.0)
    # and a rate 1e-4 req/s higher still counts, where one float of ~1e12 could not hold it
    assert _scored(True, 25.0, 500.0, 5.0001) > _scored(True, 25.0, 400.0, 5.0)


def test_the_best_rank_compares_key_by_key_row_by_row() -> None:
    """Scalars: the first key decides, then the next; a tie goes to the first candidate; NaN ranks
    lowest. Rows: the same rule per row, each row its own winner."""
    assert best_ranked([(1.0, 5.0), (1.0, 6.0), (0.0, 9.0)]) == 1
    assert best_ranked([(1.0, 5.0), (1.0, 5.0)]) == 0
    assert best_ranked([(1.0, float("nan")), (1.0, -1e300)]) == 1
    rows = best_ranked([(np.array([1.0, 0.0, 1.0]), 5.0), (1.0, np.array([4.0, 0.0, 6.0]))])
    assert rows.tolist() == [0, 1, 1]
