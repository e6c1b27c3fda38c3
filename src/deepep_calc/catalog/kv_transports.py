"""KV-cache transports of a disaggregated deployment, and what each engine does with the KV.

A prefill server hands every request's KV cache to a decode server over the scale-out fabric.
How fast depends on the library and its backend (NIXL over LIBFABRIC rides EFA's RDMA path; its
UCX backend emulates it over TCP), and on the size of each transfer, which the engine sets (its
KV block). The bandwidth-by-block-size curves, the engine facts and the load limits the facts
record are data (`data/kv_transports.toml`), each row with its source; the formulas that use
them are in `physics/kv_transfer.py`.
"""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.errors import InputError
from ..base.quantity import Q, Tag
from ..base.records import Record, row
from ._toml import validate_rows

if TYPE_CHECKING:
    from annotated_types import Gt

FILE = "kv_transports.toml"


@row
class CurvePoint(Record):
    """One measured (or placed) point of a bandwidth-by-block-size curve: a node pair's GB/s."""

    block_bytes: Annotated[int, Gt(0)]
    gb_s: Annotated[float, Gt(0)]
    tag: Literal["measured", "derived", "assumed"]
    source: str

    def q(self) -> Q:
        return Q(self.gb_s, "GB/s", Tag.parse(self.tag), self.source)


@row
class KvTransport(Record):
    """One way of moving a request's KV cache from a prefill server to a decode server."""

    name: str
    label: str
    library: Literal["nixl", "mooncake", "tcp"]
    backend: str
    rdma: bool  # rides EFA's RDMA path (false: a software path over TCP)
    instances: list[str]
    reference_gbit_per_node: Annotated[float, Gt(0)]
    curve_source: str
    warning: str = ""
    # below the first point: "latency-bound" (bandwidth falls in proportion to the block: each
    # transfer's fixed latency dominates) or "flat" (a software path slow whatever the block)
    small_blocks: Literal["latency-bound", "flat"] = "latency-bound"
    point: list[CurvePoint] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.point:
            raise ValueError("a KV transport needs at least one curve point")
        sizes = [p.block_bytes for p in self.point]
        if sizes != sorted(set(sizes)):
            raise ValueError("curve points must have rising, distinct block sizes")

    @property
    def flagged(self) -> bool:
        """Every evaluation over it carries a warning (no RDMA path on EFA)."""
        return bool(self.warning)


@row
class EngineKv(Record):
    """What one engine does with the KV cache of a disaggregated request."""

    engine: str
    block_tokens: Annotated[int, Gt(0)]
    block_tokens_mla: Annotated[int, Gt(0)]
    block_source: str
    prefill_batch_tokens: Annotated[int, Gt(0)]
    prefill_batch_source: str
    stream: Literal["after-prefill", "per-chunk", "per-layer"]
    chunk_tokens: Annotated[int, Gt(0)]
    stream_source: str
    default_kv_transport: str
    connectors: dict[str, str]
    prefill_args: list[str] = field(default_factory=list)
    decode_args: list[str] = field(default_factory=list)
    prefill_config: dict[str, str] = field(default_factory=dict)
    decode_config: dict[str, str] = field(default_factory=dict)
    router: str = ""
    router_config: str = ""
    unsure: list[str] = field(default_factory=list)
    env_nixl: dict[str, str] = field(default_factory=dict)
    env_mooncake: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.engine

    def block_q(self, mla: bool) -> Q:
        tokens = self.block_tokens_mla if mla else self.block_tokens
        return Q.assumed(float(tokens), "tokens", self.block_source)

    def batch_q(self) -> Q:
        return Q.assumed(float(self.prefill_batch_tokens), "tokens", self.prefill_batch_source)


@row
class LoadLimit(Record):
    """A load at which a KV transport was seen to fail (queue depth, writes in flight)."""

    name: str
    kv_transports: list[str]
    tokens_in_flight: Annotated[int, Gt(0)]
    source: str


@cache
def load_kv_transports() -> dict[str, KvTransport]:
    return validate_rows(FILE, "kv_transport", KvTransport)


@cache
def load_engine_kv() -> dict[str, EngineKv]:
    rows = validate_rows(FILE, "engine_kv", EngineKv)
    return {r.engine: r for r in rows.values()}


@cache
def load_limits() -> dict[str, LoadLimit]:
    return validate_rows(FILE, "limit", LoadLimit)


def engine_kv(engine: str) -> EngineKv:
    """The KV facts of an engine (every engine of engines.toml has a row: a test holds it)."""
    return load_engine_kv()[engine]


def get_kv_transport(name: str, engine: str | None = None, instance: str | None = None) -> KvTransport:
    """A KV transport by name, checked against the engine's connectors and the instance."""
    rows = load_kv_transports()
    key = name.strip().lower()
    if key not in rows:
        raise InputError("--kv-transport", name, f"one of {', '.join(rows)}")
    t = rows[key]
    if engine is not None:
        ekv = engine_kv(engine)
        if key not in ekv.connectors:
            allowed = ", ".join(n for n in rows if n in ekv.connectors)
            raise InputError("--kv-transport", name, f"one {engine} can use: {allowed}")
    if instance is not None and instance not in t.instances:
        allowed = ", ".join(n for n, r in rows.items() if instance in r.instances)
        raise InputError("--kv-transport", name, f"one available on {instance}: {allowed}")
    return t


def kv_transports_for(engine: str, instance: str, rdma_only: bool = False) -> list[KvTransport]:
    """The KV transports an engine can use on an instance (the RDMA ones only, if asked)."""
    ekv = engine_kv(engine)
    return [
        t
        for n, t in load_kv_transports().items()
        if n in ekv.connectors and instance in t.instances and (t.rdma or not rdma_only)
    ]


BANDS_FILE = "disagg_bands.toml"


@cache
def load_disagg_bands() -> dict[str, tuple[float, float]]:
    """The band the disaggregated references were missed by, per kind of figure (generated by
    `python tools/regenerate.py disagg-bands`; none before it first runs)."""
    from ._toml import DATA, read_data

    if not (DATA / BANDS_FILE).is_file():
        return {}
    doc = read_data(BANDS_FILE)
    return {k: (float(v["low"]), float(v["high"])) for k, v in doc.get("band", {}).items()}
