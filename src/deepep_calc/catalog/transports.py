"""DeepEP transports: how a cross-node dispatch is issued, and the kernel figures that pin it."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import InputError
from ._toml import validate_rows
from .constants import override_key


class KernelRef(BaseModel):
    """One published dispatch / combine measurement at the reference decode shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance: str
    ep: int = Field(gt=0)
    comms: int = Field(8, gt=0)
    qps: int = Field(6, gt=0)
    prefill: bool = Field(False, description="high-throughput (prefill) kernels, not low-latency")
    dispatch_dtype: Literal["fp8", "bf16"] = "fp8"
    dispatch_us: float | None = Field(None, gt=0)
    combine_us: float | None = Field(None, gt=0)
    total_us: float | None = Field(None, gt=0)
    tokens: int = 128
    hidden: int = 7168
    topk: int = 8
    experts: int = 256
    source: str

    @model_validator(mode="after")
    def _check(self) -> KernelRef:
        if self.total_us is None and (self.dispatch_us is None or self.combine_us is None):
            raise ValueError("a reference needs dispatch_us and combine_us, or total_us")
        return self

    @property
    def total(self) -> float:
        if self.total_us is not None:
            return self.total_us
        assert self.dispatch_us is not None and self.combine_us is not None
        return self.dispatch_us + self.combine_us


class Transport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    label: str
    fabric: Literal["efa", "ib", "nvlink"]
    initiation: Literal["host-proxy", "gpu"]
    ops_per_token: int = Field(gt=0, description="work requests per remote token (SRD: 2)")
    op_us: float = Field(ge=0, description="issue cost per work request at default lanes")
    wire_efficiency: float | None = Field(None, gt=0, le=1)
    bw_k1_gb_s: float | None = Field(None, gt=0)
    bw_comms_exponent: float | None = Field(None, ge=0)
    bw_source: str
    prefill_dispatch_gb_s: float | None = Field(None, gt=0)
    prefill_combine_gb_s: float | None = Field(None, gt=0)
    prefill_source: str = ""
    instances: list[str]
    env: dict[str, str]
    requires: str = ""
    reference: KernelRef
    cross_check: list[KernelRef] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Transport:
        if (self.wire_efficiency is None) == (self.bw_k1_gb_s is None):
            raise ValueError("give exactly one of wire_efficiency or bw_k1_gb_s")
        return self

    @property
    def host_proxied(self) -> bool:
        return self.initiation == "host-proxy"

    @property
    def comms_sensitive(self) -> bool:
        return self.bw_k1_gb_s is not None


@cache
def load_transports() -> dict[str, Transport]:
    return validate_rows("transports.toml", "transport", Transport)


def get_transport(name: str) -> Transport:
    transports = load_transports()
    key = name.strip().lower()
    if key not in transports:
        raise InputError("--transport", name, f"one of {', '.join(transports)}")
    active = override_key()
    if active:
        prefix = f"transport:{key}:"
        update = {k[len(prefix) :]: v for k, v in active if k.startswith(prefix)}
        if update:  # a sensitivity case on this transport's assumed figures
            return transports[key].model_copy(update=update)
    return transports[key]
