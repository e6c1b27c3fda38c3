"""Serving figures from a step (`physics/serving.py`): running sequences, TTFT with queueing,
aggregate, $ per Mtok, per-user rate and the tax, worked by hand with round step times."""

from __future__ import annotations

import numpy as np

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.physics.serving import per_user, running_sequences, serve, tax_ms, usd_per_mtok

from .hand import ep_layout, exact, q, resolved, val


def ms(value: float) -> Q:
    return q(value, "ms")


def test_running_sequences_are_capped_by_the_batch_of_every_dp_rank() -> None:
    """min(concurrency, max batch × DP ranks × groups): 32 clients, 256 × 16 ranks → 32;
    a batch of 1 per rank over 16 ranks → 16; two replica groups of 8 ranks, batch 1 → 16."""
    assert val(running_sequences(resolved(), ep_layout())) == 32
    assert val(running_sequences(resolved(max_batch=1), ep_layout())) == 16
    assert val(running_sequences(resolved(max_batch=1), ep_layout(dp_ranks=8.0, groups=2.0))) == 16
    r = running_sequences(resolved(), ep_layout())
    assert r.tag is Tag.ASSUMED and r.unit == "sequences"


def test_serve_without_queueing() -> None:
    """Step 20 ms, prefill 50 ms, 2 TTFT steps, OSL 200, 32 running of 32:
    TTFT = 2 × 20 + 50 = 90 ms; service = 90 + 199 × 20 = 4,070 ms;
    aggregate = 32 × 200 / 4,070 ms = 1,572.4816 tok/s; nobody waits."""
    s = serve(resolved(), ep_layout(), ms(20.0), ms(50.0), q(2.0, "steps"))
    assert val(s.running) == 32
    assert val(s.ttft_ms) == exact(90.0)
    assert val(s.service_ms) == exact(4070.0)
    assert val(s.aggregate_tok_s) == exact(32 * 200 / 4.070)
    assert s.aggregate_tok_s.unit == "tok/s" and s.ttft_ms.unit == "ms"


def test_serve_with_clients_queueing_behind_a_full_batch() -> None:
    """Batch 1 per rank × 16 ranks = 16 running of 32 clients: aggregate 16 × 200 / 4,070 ms =
    786.2408 tok/s, and each client waits 32 / 16 − 1 = 1 whole service: TTFT = 90 + 4,070 =
    4,160 ms. At 48 clients: 2 services, 90 + 8,140 = 8,230 ms."""
    s = serve(resolved(max_batch=1), ep_layout(), ms(20.0), ms(50.0), q(2.0, "steps"))
    assert val(s.aggregate_tok_s) == exact(16 * 200 / 4.070)
    assert val(s.ttft_ms) == exact(4160.0)
    s48 = serve(resolved(max_batch=1, concurrency=48), ep_layout(), ms(20.0), ms(50.0), q(2.0, "steps"))
    assert val(s48.ttft_ms) == exact(8230.0)
    s40 = serve(resolved(max_batch=1, concurrency=40), ep_layout(), ms(20.0), ms(50.0), q(2.0, "steps"))
    assert val(s40.ttft_ms) == exact(90.0 + 1.5 * 4070.0)  # 40 / 16 − 1 = 1.5 services


def test_serve_over_arrays() -> None:
    """Steps [20, 40] ms: services 4,070 and 90 + 40 + 199 × 40 = 8,090 ms (TTFT 2 × 40 + 50 = 130)."""
    s = serve(resolved(), ep_layout(), ms(np.array([20.0, 40.0])), ms(50.0), q(2.0, "steps"))
    assert np.asarray(s.service_ms.value) == exact([4070.0, 130.0 + 199 * 40])


def test_cost_per_million_tokens() -> None:
    """2 nodes × $100 per node-hour / (1,000 tok/s × 3,600 s) × 10⁶ = $55.5556 per Mtok; a
    user price of $50 halves it; both rest on an assumed price."""
    agg = Q.derived(1000.0, "tok/s", "x")
    cost = usd_per_mtok(resolved(), agg)
    assert val(cost) == exact(200 / 3.6)
    assert cost.unit == "$/Mtok" and cost.tag is Tag.ASSUMED
    assert val(usd_per_mtok(resolved(price_per_hour=50.0), agg)) == exact(100 / 3.6)
    assert val(usd_per_mtok(resolved(nodes=4), agg)) == exact(400 / 3.6)


def test_per_user_rate_and_tax() -> None:
    """1000 / 20 ms = 50 tok/s. Tax = DeepEP step − alternative: 30 − 20 = +10 ms/token; measured
    steps give a derived tax; a faster DeepEP gives a negative one (a saving)."""
    pu = per_user(ms(20.0))
    assert val(pu) == 50.0 and pu.unit == "tok/s"
    a, b = Q.measured(30.0, "ms", "a"), Q.measured(20.0, "ms", "b")
    tax = tax_ms(a, b)
    assert val(tax) == 10.0 and tax.unit == "ms/token" and tax.tag is Tag.DERIVED
    assert val(tax_ms(b, a)) == -10.0
