"""A disaggregated deployment's serving figures (`physics/disagg.py`), by hand.

The deployment of most tests: 32 clients, OSL 100, a prefill of 50 ms, 10 ms of exposed KV
transfer, a decode step of 20 ms, capacities prefill 100, decode 8, transfer 50 req/s.
Cycle = 50 + 10 + 100 × 20 = 2,060 ms; the clients alone would send 32 × 1,000 / 2,060 =
15.53 req/s, so decode (8 req/s) sets the throughput.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.physics.disagg import (
    LIMITS,
    balanced_prefill_share,
    decode_capacity_req_s,
    deploy,
    prefill_capacity_req_s,
    prompts_per_forward,
)

from .hand import exact, q, val


def ms(value: float) -> Q:
    return q(value, "ms")


def rates(prefill: float = 100.0, decode: float = 8.0, transfer: float = 50.0) -> dict[str, Q]:
    return {"prefill": q(prefill, "req/s"), "decode": q(decode, "req/s"), "transfer": q(transfer, "req/s")}


def test_prompts_per_forward() -> None:
    """A budget of 8,192 tokens: floor(8,192 / 1,000) = 8 prompts of 1,000 tokens, 2 of 3,000,
    and still 1 of 20,000 (a prompt longer than the budget runs alone)."""
    budget = Q.assumed(8192.0, "tokens", "engine budget")
    p = prompts_per_forward(budget, 1000)
    assert val(p) == 8.0 and p.unit == "prompts" and p.tag is Tag.ASSUMED
    rows = prompts_per_forward(budget, np.array([1000.0, 3000.0, 20_000.0]))
    assert np.asarray(rows.value).tolist() == [8.0, 2.0, 1.0]


def test_the_capacities_of_each_side() -> None:
    """Prefill: 16 lanes × 8 prompts per 200 ms forward = 128 / 0.2 s = 640 req/s. Decode: 64
    running / (100 tokens × 20 ms = 2 s) = 32 req/s."""
    pre = prefill_capacity_req_s(16, q(8.0, "prompts"), ms(200.0))
    assert val(pre) == exact(640.0) and pre.unit == "req/s"
    dec = decode_capacity_req_s(q(64.0, "sequences"), 100, ms(20.0))
    assert val(dec) == exact(32.0) and dec.unit == "req/s"


def test_a_deployment_limited_by_its_decode_side() -> None:
    """Throughput min(15.53, 100, 8, 50) = 8 req/s (limit: decode); aggregate 8 × 100 = 800
    tok/s; the clients queue 32 × 1,000 / 8 − 2,060 = 1,940 ms; TTFT = 1,940 + 50 + 10 + 20 =
    2,020 ms (unqueued 80); per-user 1,000 / 20 = 50 tok/s; busy: prefill 8 / 100 = 0.08,
    decode 1, transfer 8 / 50 = 0.16."""
    d = deploy(32, 100, ms(50.0), ms(10.0), ms(20.0), rates())
    assert val(d.cycle_ms) == 2060.0
    assert val(d.throughput_req_s) == 8.0 and LIMITS[d.limit] == "decode"
    assert val(d.aggregate_tok_s) == 800.0 and d.aggregate_tok_s.unit == "tok/s"
    assert val(d.queue_ms) == exact(1940.0)
    assert val(d.ttft_ms) == exact(2020.0) and val(d.ttft_unqueued_ms) == 80.0
    assert val(d.per_user_tok_s) == 50.0
    assert {k: val(v) for k, v in d.busy.items()} == exact({"prefill": 0.08, "decode": 1.0, "transfer": 0.16})


def test_a_light_load_is_set_by_its_clients_and_waits_for_nothing() -> None:
    """4 clients: 4,000 / 2,060 = 1.9417 req/s, below every capacity: no queue, TTFT the unqueued
    80 ms; decode busy 1.9417 / 8."""
    d = deploy(4, 100, ms(50.0), ms(10.0), ms(20.0), rates())
    assert LIMITS[d.limit] == "clients"
    assert val(d.throughput_req_s) == exact(4000.0 / 2060.0)
    assert val(d.queue_ms) == pytest.approx(0.0, abs=1e-9)
    assert val(d.ttft_ms) == pytest.approx(80.0, rel=1e-12)
    assert val(d.busy["decode"]) == exact(4000.0 / 2060.0 / 8.0)


def test_the_link_and_the_prefill_side_can_set_it_too() -> None:
    """Transfer capacity 5 req/s: limit transfer, 500 tok/s. Prefill capacity 2: limit prefill."""
    link = deploy(32, 100, ms(50.0), ms(10.0), ms(20.0), rates(transfer=5.0))
    assert LIMITS[link.limit] == "transfer" and val(link.aggregate_tok_s) == 500.0
    pre = deploy(32, 100, ms(50.0), ms(10.0), ms(20.0), rates(prefill=2.0))
    assert LIMITS[pre.limit] == "prefill" and val(pre.throughput_req_s) == 2.0


def test_a_side_with_no_capacity_serves_nothing() -> None:
    """Decode capacity 0 (nothing fits on it): throughput 0, an endless queue and TTFT, the
    decode side counted fully busy rather than a division by zero."""
    with np.errstate(divide="raise", invalid="raise"):
        d = deploy(32, 100, ms(50.0), ms(10.0), ms(20.0), rates(decode=0.0))
    assert val(d.throughput_req_s) == 0.0 and val(d.aggregate_tok_s) == 0.0
    assert val(d.queue_ms) == float("inf") and val(d.ttft_ms) == float("inf")
    assert val(d.busy["decode"]) == 1.0 and val(d.busy["prefill"]) == 0.0


def test_rows_of_a_plan_each_find_their_limit() -> None:
    """Concurrency [4, 32]: the first row is set by its clients, the second by decode."""
    d = deploy(np.array([4.0, 32.0]), 100, ms(50.0), ms(10.0), ms(20.0), rates())
    assert [LIMITS[i] for i in np.asarray(d.limit).tolist()] == ["clients", "decode"]
    assert np.asarray(d.throughput_req_s.value) == exact([4000.0 / 2060.0, 8.0])


def test_the_split_that_balances_the_sides() -> None:
    """Prefill 100 req/s on 2 nodes = 50 per node; decode 8 req/s on 4 nodes = 2 per node:
    2 / 50 = 0.04 prefill nodes per decode node."""
    share = balanced_prefill_share(q(100.0, "req/s"), 2, q(8.0, "req/s"), 4)
    assert val(share) == exact(0.04) and share.unit == "P per D"
