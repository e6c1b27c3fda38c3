"""Moving a request's KV cache from a prefill server to a decode server.

    bytes per request  = the model's KV of ISL tokens (params.kv_bytes_per_sequence: MLA latents,
                         GQA keys and values, sliding windows capped, linear layers' state)
    copies             = decode ranks that hold the sequence / how many ways its KV is sharded
    block              = the engine's KV block: block tokens x KV bytes of one token in one layer
                         / the shard (each layer's cache is its own tensor: one block of one layer
                         is one transfer)
    node pair GB/s     = the KV transport's curve at that block (log-log between measured
                         points; below the first, in proportion to the block: the per-transfer
                         latency bounds it, one-point curves too, unless the KV transport is
                         slow whatever the block; above the last, flat), scaled by the
                         instance's line rate
    per GPU pair       = node pair GB/s / GPUs per node (the curves were taken with every GPU of
                         both nodes moving at once: assumed to split evenly)
    transfer           = bytes x copies over the GPU pairs that move one request in parallel
                         (min of the ranks that hold it on each side), each at its share
    exposed            = max(transfer / units, transfer - prefill x (units - 1) / units)
                         where the engine streams the KV in `units` pieces as the prefill runs
                         (layers, or chunks); 1 unit: the whole transfer follows the prefill
    link capacity      = node pair GB/s x node pairs / bytes of every copy     (requests / s)

Nothing here is fitted: every figure is computed from the model, the layouts and the curves of
`catalog/data/kv_transports.toml`.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ..base.arrays import ceil, floats, is_array, maximum, minimum, np
from ..base.quantity import Q, Tag
from ..catalog.hardware import Instance
from ..catalog.kv_transports import KvTransport
from ..catalog.models import ModelSpec
from .params import kv_bytes_per_sequence, kv_bytes_per_token_layer

GB = 1e9


def _model_tag(m: ModelSpec) -> Tag:
    return Tag.DERIVED if m.verified else Tag.ASSUMED


def kv_bytes_per_request(m: ModelSpec, isl: Any) -> Q:
    """The KV cache one prompt of `isl` tokens leaves on the prefill server, whole model.

    DeepSeek-V3 in BF16: (512 + 64) x 61 x 2 = 70,272 B per token; Qwen3-235B: 2 x 4 x 128 x 94
    x 2 = 192,512 B per token (the model's own formula, `params.kv_bytes_per_sequence`)."""
    value = kv_bytes_per_sequence(m, floats(isl))
    return Q(value, "B", _model_tag(m), f"KV of ISL tokens, {m.attention.kind} ({m.name}, KV {m.kv_dtype})")


def block_bytes(m: ModelSpec, block_tokens: Q, kv_shard: Any) -> Q:
    """Bytes of one transfer: one KV block of one layer, of one rank's shard."""
    per = kv_bytes_per_token_layer(m) / floats(kv_shard)
    return Q(
        block_tokens.value * per,
        "B",
        min(block_tokens.tag, _model_tag(m)),
        f"block of {block_tokens.value:g} tokens x KV bytes per token and layer / shard; "
        f"{block_tokens.source}",
    )


def _interpolate(points: list[tuple[float, float]], x: Any, flat_below: bool = False) -> Any:
    """Bandwidth at block size x: log-log between points, flat above; below the first point in
    proportion to the block (a fixed latency per transfer), or flat where `flat_below`."""
    if flat_below:
        x = maximum(x, points[0][0])
    if len(points) == 1:
        x0, y0 = points[0]
        return y0 * minimum(floats(x), x0) / x0
    if is_array(x):
        xs = np.log(np.asarray([p[0] for p in points]))
        ys = np.log(np.asarray([p[1] for p in points]))
        lx = np.log(np.maximum(np.asarray(x, dtype=float), 1.0))
        inside = np.exp(np.interp(lx, xs, ys))
        below = points[0][1] * np.asarray(x, dtype=float) / points[0][0]
        return np.where(np.asarray(x) < points[0][0], below, inside)
    if x <= points[0][0]:
        return points[0][1] * x / points[0][0]
    if x >= points[-1][0]:
        return points[-1][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= x <= x1:
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))
    return points[-1][1]  # pragma: no cover - the loop covers [x0, x_last]


def _neighbour_tag(t: KvTransport, x: Any) -> Tag:
    """The weakest tag of the points the interpolation rests on (over every row of an array),
    and never stronger than derived: a figure read off a curve is arithmetic on it."""
    sizes = [p.block_bytes for p in t.point]
    lo = float(np.min(x)) if is_array(x) else float(x)
    hi = float(np.max(x)) if is_array(x) else float(x)
    first = max((i for i, s in enumerate(sizes) if s <= lo), default=0)
    last = min((i for i, s in enumerate(sizes) if s >= hi), default=len(sizes) - 1)
    return min(Tag.DERIVED, *(Tag.parse(p.tag) for p in t.point[first : last + 1]))


def line_rate_gb_s(instance: Instance) -> float:
    """A node's scale-out line rate in GB/s (Gb/s / 8)."""
    return instance.nic_count * instance.nic_gbit_each / 8.0


def node_pair_gb_s(t: KvTransport, block: Q, instance: Instance) -> Q:
    """The KV transport's bandwidth between two nodes at this block size, on this instance."""
    x = block.value
    raw = _interpolate([(float(p.block_bytes), p.gb_s) for p in t.point], x, t.small_blocks == "flat")
    tag = min(_neighbour_tag(t, x), block.tag)
    gbit = instance.nic_count * instance.nic_gbit_each
    scale = gbit / t.reference_gbit_per_node if t.rdma else 1.0
    where = f"{t.name} curve at the block size ({t.curve_source})"
    if scale != 1.0:
        tag = Tag.ASSUMED
        where += f"; x {scale:g} for {instance.name}'s {gbit:g} Gb/s per node (assumed to scale)"
    value = minimum(raw * scale, line_rate_gb_s(instance))
    return Q(value, "GB/s", tag, where)


def transfer_ms(request_bytes: Q, copies_: Any, streams: Any, pair: Q, gpus_per_node: int) -> Q:
    """One request's KV crossing: every copy the decode side needs, over the GPU pairs that move
    it in parallel, each at its share of the node pair's bandwidth."""
    per_gpu = (pair / float(gpus_per_node)).as_("GB/s", f"{pair.source}; / {gpus_per_node} GPU pairs")
    moved = (request_bytes * (floats(copies_) / floats(streams)) / GB).as_("GB")
    return moved.quotient(per_gpu, 1000.0, "ms", "KV copies / GPU pairs / (node pair GB/s / GPUs per node)")


def copies(holders: Any, kv_shard: Any) -> Any:
    """Full copies of a sequence's KV the decode side holds (MLA latents replicate under TP)."""
    return floats(holders) / floats(kv_shard)


def streaming_units(stream: str, layers: int, isl: Any, chunk_tokens: int) -> Any:
    """Pieces the engine sends the KV in while the prefill runs (1: all of it after)."""
    if stream == "per-layer":
        return float(layers)
    if stream == "per-chunk":
        return maximum(ceil(floats(isl) / float(chunk_tokens)), 1.0)
    return 1.0


def exposed_ms(transfer: Q, prefill: Q, units: Any) -> Q:
    """The part of the transfer the first token waits for, when it streams in `units` pieces
    behind the prefill: the last piece always, the rest only where they outrun the prefill."""
    u = floats(units)
    if type(u) is float and u == 1.0:
        return transfer.as_("ms", f"{transfer.source}; sent after the prefill (no overlap)")
    last = (transfer / u).as_("ms")
    behind = (transfer - (prefill * ((u - 1.0) / u)).as_("ms")).as_("ms")
    value = maximum(last.value, behind.value)
    return Q(value, "ms", min(transfer.tag, prefill.tag), f"{transfer.source}; streamed in pieces")


def link_capacity_req_s(request_bytes: Q, copies_: Any, pair: Q, node_pairs: Any) -> Q:
    """Requests per second the prefill-to-decode links carry: every copy of every request."""
    total = (request_bytes * floats(copies_) / GB).as_("GB")
    rate = (pair * floats(node_pairs)).as_("GB/s")
    return rate.quotient(total, 1.0, "req/s", "node pair GB/s x node pairs / KV GB of every copy")


def tokens_in_flight(isl: Any, concurrency: Any) -> Any:
    """Prompt tokens whose KV may be in flight at once (the load the queue-depth limits bound)."""
    return floats(isl) * floats(concurrency)
