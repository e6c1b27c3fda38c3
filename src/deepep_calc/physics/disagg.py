"""A disaggregated deployment's serving figures, from its two sides and the KV transfer between.

    prompts per forward = max(1, floor(prefill token budget / ISL))        (per DP rank)
    prefill capacity    = prefill lanes x prompts per forward / busy forward      (requests / s)
    decode capacity     = decode running limit / (OSL x decode step)             (requests / s)
    cycle               = prefill + exposed transfer + OSL x decode step   (one request, unqueued)
    throughput          = min(C / cycle, prefill capacity, decode capacity, link capacity)
    queue               = max(C / throughput - cycle, 0)        (closed-loop clients wait here)
    TTFT                = queue + prefill + exposed transfer + first decode step
    TPOT                = the decode side's step, no prefill mixed in
    aggregate           = throughput x OSL ;  $/Mtok from P + D nodes (physics/serving.py)

The prefill of a request that arrives alone takes one prompt on one lane (its TTFT part); at
capacity every lane runs a full batch, so the capacity and the latency are different steps.
The side that limits the throughput is the bottleneck; the others sit partly idle (busy =
throughput / capacity). The split that balances the two sides for this load is
P : D = (decode capacity per decode node) : (prefill capacity per prefill node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import floats, floor, is_array, maximum, minimum, np
from ..base.quantity import Q, qmin

LIMITS = ("clients", "prefill", "decode", "transfer")


@dataclass(frozen=True, eq=False)
class Deployment:
    """Serving figures of one disaggregated deployment (values may be arrays: the planner)."""

    cycle_ms: Q
    throughput_req_s: Q
    aggregate_tok_s: Q
    queue_ms: Q
    ttft_ms: Q
    ttft_unqueued_ms: Q
    per_user_tok_s: Q
    busy: dict[str, Q]  # prefill, decode, transfer: throughput / capacity
    limit: Any  # index into LIMITS of what sets the throughput


def prompts_per_forward(budget_tokens: Q, isl: Any) -> Q:
    """Prompts one prefill forward of a DP rank takes: its token budget over ISL, at least one."""
    value = maximum(floor(budget_tokens.value / floats(isl)), 1.0)
    return Q(value, "prompts", budget_tokens.tag, f"max(1, floor(budget / ISL)); {budget_tokens.source}")


def prefill_capacity_req_s(lanes: Any, prompts: Q, busy_forward_ms: Q) -> Q:
    """Requests per second a prefill side finishes with every lane running full forwards."""
    return (prompts * floats(lanes)).quotient(
        busy_forward_ms, 1000.0, "req/s", "lanes x prompts per forward / busy forward"
    )


def decode_capacity_req_s(running_limit: Q, osl: Any, step_ms: Q) -> Q:
    """Requests per second a decode side finishes at its running limit."""
    return running_limit.quotient(
        (step_ms * floats(osl)).as_("ms"), 1000.0, "req/s", "running limit / (OSL x decode step)"
    )


def _over(a: Any, b: Any) -> Any:
    """a / b, infinite where b is 0 (a side with no capacity: nothing fits on it)."""
    if is_array(a) or is_array(b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                np.asarray(b) > 0, np.asarray(a, dtype=float) / np.asarray(b, dtype=float), np.inf
            )
    return a / b if b > 0 else float("inf")


def _limit_index(values: list[Any]) -> Any:
    if any(is_array(v) for v in values):
        stacked = np.stack(np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in values]))
        return np.argmin(stacked, axis=0)
    return min(range(len(values)), key=lambda i: values[i])


# size: a deployment's independent quantities (load, OSL, three side times, capacities), per row
def deploy(
    concurrency: Any,
    osl: Any,
    prefill_ms: Q,
    exposed_ms: Q,
    step_ms: Q,
    capacity_req_s: dict[str, Q],
) -> Deployment:
    """The closed-loop serving figures of a deployment whose sides and link are known.

    `capacity_req_s`: "prefill", "decode" and "transfer" capacities (requests / s).
    """
    c = floats(concurrency)
    o = floats(osl)
    decode_ms = (step_ms * o).as_("ms")
    cycle = (prefill_ms + exposed_ms + decode_ms).as_("ms", "prefill + exposed transfer + OSL x decode step")
    clients = Q(_over(c * 1000.0, cycle.value), "req/s", cycle.tag, "concurrency / cycle (no queue)")
    rate = clients
    for name in ("prefill", "decode", "transfer"):
        rate = qmin(rate, capacity_req_s[name])
    rate = rate.as_("req/s", "the least of concurrency / cycle and the prefill, decode and link capacities")
    limit = _limit_index(
        [clients.value, *(capacity_req_s[n].value for n in ("prefill", "decode", "transfer"))]
    )
    waited = _over(c * 1000.0, rate.value) - cycle.value
    queue = Q(maximum(waited, 0.0), "ms", min(rate.tag, cycle.tag), "concurrency / throughput - cycle")
    unqueued = (prefill_ms + exposed_ms + step_ms).as_(
        "ms", "prefill + exposed KV transfer + first decode step"
    )
    ttft = (queue + unqueued).as_("ms", "queue + prefill + exposed KV transfer + first decode step")
    aggregate = (rate * o).as_("tok/s", "throughput x OSL")
    per_user = (1000.0 / step_ms).as_("tok/s", step_ms.source)
    busy = {
        name: Q(
            minimum(_over(rate.value, capacity_req_s[name].value), 1.0),
            "1",
            min(rate.tag, capacity_req_s[name].tag),
            f"throughput / {name} capacity",
        )
        for name in ("prefill", "decode", "transfer")
    }
    return Deployment(cycle, rate, aggregate, queue, ttft, unqueued, per_user, busy, limit)


def balanced_prefill_share(prefill: Q, prefill_nodes: Any, decode: Q, decode_nodes: Any) -> Q:
    """Prefill nodes per decode node that would balance the two sides' capacities."""
    per_p = prefill.value / floats(prefill_nodes)
    per_d = decode.value / floats(decode_nodes)
    return Q(
        per_d / per_p,
        "P per D",
        min(prefill.tag, decode.tag),
        "decode capacity per decode node / prefill capacity per prefill node",
    )
