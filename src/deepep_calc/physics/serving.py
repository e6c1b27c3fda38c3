"""Serving figures from a step: running sequences, TTFT with queueing, aggregate, cost.

    running     = min(concurrency, max batch per DP rank x DP ranks x groups)
    TTFT        = prefill step + ttft_steps x decode step + queueing behind a full batch
    service     = TTFT + (OSL - 1) x decode step                 (one request, start to end)
    aggregate   = running x OSL / service                         (closed-loop clients)
    $/Mtok      = nodes x price per node-hour / (aggregate x 3600) x 1e6

Closed-loop clients beyond the engine's batch wait for a slot: about
(concurrency / running - 1) whole services, which lands in their TTFT.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.arrays import floats, maximum, minimum
from ..base.quantity import Q
from ..question.scenario import Resolved
from .layout import Layout


@dataclass(frozen=True, eq=False)
class Serving:
    running: Q
    ttft_ms: Q
    aggregate_tok_s: Q
    service_ms: Q
    ttft_unqueued_ms: Q  # the first token without waiting for a batch slot


def running_sequences(r: Resolved, lay: Layout) -> Q:
    """Sequences the engine runs at once; the rest of the concurrency queues."""
    cap = floats(r.max_batch) * lay.dp_ranks * lay.groups
    return Q.assumed(  # rests on the user's concurrency and the engine's batch setting
        minimum(floats(r.scenario.concurrency), cap),
        "sequences",
        f"min(concurrency, max batch per rank {r.max_batch_source} x DP ranks)",
    )


def serve(r: Resolved, lay: Layout, step_ms: Q, prefill_ms: Q, ttft_steps: Q) -> Serving:
    """TTFT, aggregate throughput and service time of one arm from its step times."""
    s = r.scenario
    running = running_sequences(r, lay)
    ttft = ((ttft_steps * step_ms).as_("ms") + prefill_ms).as_("ms")
    osl = floats(s.osl)
    service = (ttft + (step_ms * (osl - 1.0)).as_("ms")).as_("ms")
    aggregate = (running * osl).quotient(service, 1000.0, "tok/s", "running x OSL / (TTFT + (OSL-1) x step)")
    waiting_rounds = maximum(floats(s.concurrency) / running.value - 1.0, 0.0)
    queued = (ttft + (service * waiting_rounds).as_("ms")).as_("ms")
    return Serving(running, queued, aggregate, service, ttft)


def usd_per_mtok(r: Resolved, aggregate: Q) -> Q:
    price = r.instance.price(r.scenario.price_per_hour)
    why = f"nodes x price per node-hour / (aggregate tok/s x 3600) x 1e6; {price.source}"
    cluster = price * floats(r.scenario.nodes)
    return cluster.quotient(aggregate * 3600.0, 1e6, "$/Mtok", why)


def per_user(step_ms: Q) -> Q:
    return (1000.0 / step_ms).as_("tok/s", step_ms.source)


def tax_ms(deepep_step: Q, other_step: Q) -> Q:
    """The DeepEP per-token tax: its step minus the alternative's (negative = a saving)."""
    return (deepep_step - other_step).as_("ms/token", "DeepEP step - alternative step")
