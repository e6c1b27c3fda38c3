"""Instance types: GPUs, memory, NVLink and the scale-out network, with visible unit conversion."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.errors import InputError
from ..base.quantity import Q
from ..base.records import Record, row
from ._toml import validate_rows

if TYPE_CHECKING:
    from annotated_types import Gt


PriceKind = Literal["on-demand", "capacity-block", "quote"]
PRICE_KINDS: tuple[str, ...] = ("on-demand", "capacity-block", "quote")
# How each kind is named to a reader; "given" is a price the user typed (--price-per-hour).
PRICE_KIND_WORDS = {
    "on-demand": "on-demand",
    "capacity-block": "Capacity Block",
    "quote": "quote",
    "given": "your own price",
}


@row
class Instance(Record):
    name: str
    aws_name: str
    fabric: Literal["efa", "ib"]
    gpu: str
    gpus_per_node: Annotated[int, Gt(0)]
    hbm_gb: Annotated[float, Gt(0)]
    hbm_tb_s: Annotated[float, Gt(0)]
    nvlink_gb_s_bidir: Annotated[float, Gt(0)]
    nic_count: Annotated[int, Gt(0)]
    nic_gbit_each: Annotated[float, Gt(0)]
    bf16_tflops: Annotated[float, Gt(0)]
    fp8_tflops: Annotated[float, Gt(0)]
    fp4_tflops: Annotated[float, Gt(0)]
    price_per_hour: Annotated[float, Gt(0)] | None = None
    price_source: str
    gda_supported: bool
    source: str
    price_kind: PriceKind | None = None  # what the price is (see PRICE_KINDS); every price has one

    def __post_init__(self) -> None:
        if self.price_per_hour is not None and self.price_kind is None:
            raise ValueError(f"{self.name}: a price needs its price_kind ({', '.join(PRICE_KINDS)})")

    # Quantities with their provenance ------------------------------------------------
    def hbm(self) -> Q:
        return Q.assumed(self.hbm_gb, "GB", f"{self.gpu} HBM per GPU: {self.source}")

    def hbm_bw(self) -> Q:
        return Q.assumed(self.hbm_tb_s * 1000.0, "GB/s", f"{self.gpu} HBM bandwidth (spec)")

    def net_gb_s_per_gpu(self, gpus_per_node: int | None = None) -> Q:
        """Scale-out line rate per GPU per direction, converted from the node's Gb/s."""
        gpn = gpus_per_node or self.gpus_per_node
        gbit = self.nic_count * self.nic_gbit_each
        return Q.assumed(
            gbit / 8.0 / gpn,
            "GB/s",
            f"{self.nic_count} x {self.nic_gbit_each:g} Gb/s = {gbit:g} Gb/s per node"
            f" / 8 bit/B = {gbit / 8:g} GB/s / {gpn} GPUs (per direction)",
        )

    def nvlink_gb_s(self) -> Q:
        """NVLink per GPU per direction (spec is bidirectional)."""
        return Q.assumed(
            self.nvlink_gb_s_bidir / 2.0,
            "GB/s",
            f"{self.gpu} NVLink {self.nvlink_gb_s_bidir:g} GB/s bidirectional / 2",
        )

    def tflops(self, dtype: str) -> Q:
        peak = {
            "fp8": self.fp8_tflops,
            "mxfp4": self.fp4_tflops,
            "nvfp4": self.fp4_tflops,
            "int4": self.fp8_tflops,
            "int8": self.fp8_tflops,
        }.get(dtype, self.bf16_tflops)
        return Q.assumed(peak, "TFLOP/s", f"{self.gpu} dense {dtype} peak (spec)")

    def price(self, override: float | None = None) -> Q:
        if override is not None:
            return Q.assumed(override, "$/h", "user-given price per node-hour")
        value = self.price_per_hour if self.price_per_hour is not None else float("nan")
        return Q.assumed(value, "$/h", self.price_source)


@cache
def load_instances() -> dict[str, Instance]:
    return validate_rows("instances.toml", "instance", Instance)


def get_instance(name: str) -> Instance:
    instances = load_instances()
    key = name.strip().lower()
    if key not in instances:
        raise InputError("--instance", name, f"one of {', '.join(instances)}")
    return instances[key]
