"""DeepEP transports: how a cross-node dispatch is issued, and the kernel figures that pin it."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.errors import InputError
from ..base.records import Record, row
from ._toml import validate_rows
from .constants import CATALOG, Assumptions

if TYPE_CHECKING:
    from annotated_types import Ge, Gt, Le


@row
class KernelRef(Record):
    """One published dispatch / combine measurement (decode shape unless stated).

    `role` says which row a transport is known by (`fit`: the designated reference and the
    extra shapes given with it); every in-scope row enters the fit of its transport (a row
    inside one node, of its library's NVLink constants) whatever its role.
    `in_scope = false` marks a row that measures
    something the model has no knob for (another kernel implementation, a code path that no
    longer exists); it is reported but kept out of the accuracy figures, with `scope_note`
    saying why. `harness` names a campaign that measured several instances the same way: such
    pairs fit the instance factors. `trust = "assumed"` for a weak source.
    """

    instance: str
    ep: Annotated[int, Gt(0)]
    comms: Annotated[int, Gt(0)] = 8
    qps: Annotated[int, Gt(0)] = 6
    role: Literal["fit", "cross-check"] = "cross-check"
    harness: str = ""
    trust: Literal["measured", "assumed"] = "measured"
    in_scope: bool = True
    scope_note: str = ""
    prefill: bool = False  # high-throughput (prefill) kernels, not low-latency
    dispatch_dtype: Literal["fp8", "bf16"] = "fp8"
    dispatch_us: Annotated[float, Gt(0)] | None = None
    combine_us: Annotated[float, Gt(0)] | None = None
    total_us: Annotated[float, Gt(0)] | None = None
    tokens: int = 128
    hidden: int = 7168
    topk: int = 8
    experts: int = 256
    setting: str = ""  # what sets it apart from other runs of the same cell (SMs, QPs, statistic)
    source: str

    def __post_init__(self) -> None:
        if self.total_us is None and self.dispatch_us is None:
            raise ValueError("a reference needs dispatch_us (and combine_us), or total_us")
        if self.total_us is None and self.combine_us is None and self.role == "fit":
            raise ValueError("a fit reference needs both dispatch_us and combine_us, or total_us")

    @property
    def dispatch_only(self) -> bool:
        return self.total_us is None and self.combine_us is None

    @property
    def total(self) -> float:
        if self.total_us is not None:
            return self.total_us
        assert self.dispatch_us is not None and self.combine_us is not None
        return self.dispatch_us + self.combine_us

    @property
    def label(self) -> str:
        """`p5en EP16, 128 tok/rank, gate run ...: 4 SMs, 6 QPs, p50`: the kernel point and its
        setting, so two measurements of one point are never shown as one figure."""
        point = f"{self.instance} EP{self.ep}, {self.tokens} tok/rank"
        return f"{point}, {self.setting}" if self.setting else point

    def same_point(self, other: KernelRef) -> bool:
        """Whether two references measure the same shape on the same instance and EP."""
        return (self.instance, self.ep, self.tokens, self.hidden, self.topk, self.experts) == (
            other.instance,
            other.ep,
            other.tokens,
            other.hidden,
            other.topk,
            other.experts,
        ) and (self.dispatch_dtype, self.prefill) == (other.dispatch_dtype, other.prefill)

    def describe(self, transport: str) -> str:
        """`efa-proxy @ p5en EP16 128 tok`: what a row measured, for reports (the shape when it
        is not DeepSeek-V3's)."""
        extra = " prefill" if self.prefill else ""
        dtype = f" {self.dispatch_dtype} dispatch" if self.dispatch_dtype != "fp8" else ""
        shape = ""
        if (self.hidden, self.topk, self.experts) != (7168, 8, 256):
            shape = f" h{self.hidden} top-{self.topk} E{self.experts}"
        setting = f" ({self.setting})" if self.setting else ""
        return f"{transport} @ {self.instance} EP{self.ep} {self.tokens} tok{shape}{extra}{dtype}{setting}"


Library = Literal["deepep-v2", "deepep-v1", "uccl-ep", "pplx-garden", "research"]


@row
class Transport(Record):
    name: str
    label: str
    fabric: Literal["efa", "ib", "nvlink"]
    initiation: Literal["host-proxy", "gpu"]
    library: Library  # the DeepEP implementation an engine loads (engines.toml `deepep_backend`)
    ops_per_token: Annotated[int, Gt(0)]  # work requests per remote token (SRD: 2)
    issue_lanes: Annotated[int, Gt(0)] = 1  # proxy threads or issuers posting in parallel
    wire_efficiency: Annotated[float, Gt(0), Le(1)] | None = None
    bw_k1_gb_s: Annotated[float, Gt(0)] | None = None
    bw_comms_exponent: Annotated[float, Ge(0)] | None = None
    bw_source: str
    prefill_dispatch_gb_s: Annotated[float, Gt(0)] | None = None
    prefill_combine_gb_s: Annotated[float, Gt(0)] | None = None
    prefill_source: str = ""
    instances: list[str]
    env: dict[str, str]
    requires: str = ""
    graphs_evidence: str = ""  # what CUDA-graph replay hides of the path, and the evidence
    fixed_floor_us: Annotated[float, Gt(0)] | None = None  # a measured small-message floor per operation
    fixed_floor_source: str = ""
    reference: KernelRef
    cross_check: list[KernelRef] = field(default_factory=list)
    fit: list[KernelRef] = field(default_factory=list)  # extra shapes the fit uses

    def __post_init__(self) -> None:
        if (self.wire_efficiency is None) == (self.bw_k1_gb_s is None):
            raise ValueError("give exactly one of wire_efficiency or bw_k1_gb_s")

    @property
    def host_proxied(self) -> bool:
        return self.initiation == "host-proxy"

    @property
    def comms_sensitive(self) -> bool:
        """EP_NUM_COMMS and EP_EFA_MAX_QPS change this transport (the NCCL-GIN proxy)."""
        return self.bw_k1_gb_s is not None

    def references(self) -> list[KernelRef]:
        """The primary reference, the extra fit shapes, then the cross-checks."""
        return [self.reference, *self.fit, *self.cross_check]


@cache
def load_transports() -> dict[str, Transport]:
    return validate_rows("transports.toml", "transport", Transport)


def get_transport(name: str, assumptions: Assumptions = CATALOG) -> Transport:
    """The catalog's row, with the figures `assumptions` changes (a sensitivity case)."""
    transports = load_transports()
    key = name.strip().lower()
    if key not in transports:
        raise InputError("--transport", name, f"one of {', '.join(transports)}")
    update = assumptions.transport_figures(key)
    if update:
        return transports[key].copy(**update)
    return transports[key]


def deepep_route(transport: str, nodes: int) -> str:
    """What DeepEP's exchange rides, as the words name it: the configured transport across
    nodes, NVLink on one node (every peer is in the node; the model charges no EFA path there,
    so no face may name one)."""
    return transport if nodes > 1 else "NVLink"


def kernel_route(transport: str, ep: int, gpus_per_node: int) -> str:
    """`deepep_route` for one kernel: the nodes its EP group spans decide."""
    return deepep_route(transport, -(-ep // gpus_per_node))
