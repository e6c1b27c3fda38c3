"""The calibration profile's schema: its records, and what the estimate asks of a profile.

One pydantic record per section of the TOML file `deepep-calc calibrate` writes, each strict
(unknown keys refused) and checked for the physics it feeds (units, signs). `Profile` offers
what the estimate needs: `cells()` (measured cells, consulted before the catalog's),
`apply(table, r)` (the fitted table with the profile's engine constants and refitted transport
in place) and `kernel_fit(transport)` (a transport refitted to the user's kernel log, or None).
Reading a file into a `Profile` is `fit/profile.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..base.errors import InputError
from ..base.quantity import Q, Tag
from ..base.records import constraint_names
from ..catalog.measured import Cell
from ..physics.deepep import KernelShape
from ..physics.step import EngineConstants
from ..question.scenario import Resolved, Scenario
from .engines import ENGINE_FIELDS
from .table import Table, TransportFit

SCHEMA_VERSION = 3  # 3: kernel refits hold the cost per message and signal ratio of fit version 3
KIND = "deepep-calc calibration profile"
MAX_PROFILE_BYTES = 4 * 1024 * 1024
MAX_PROFILE_NUMBER = 1e12
"""No figure a profile holds (ms, us, tok/s, bytes, counts) comes near this; beyond it is damage."""
CONSTANTS = ENGINE_FIELDS

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _check_physical(record: QRecord | None, unit: str, name: str) -> None:
    """A constant the physics adds to others must carry its unit and be >= 0 (the fit pins at 0).

    A hand-edited unit would otherwise surface as a unit-mismatch crash deep in the step model,
    and a negative latency as negative throughput.
    """
    if record is None:
        return
    if record.unit != unit:
        raise ValueError(f"{name} is in {record.unit!r}; expected {unit!r}")
    if record.value < 0:
        raise ValueError(f"{name} is {record.value:g}; expected at least 0")


class QRecord(BaseModel):
    """A `Q` as stored: the keys of `Q.to_json()`."""

    model_config = _STRICT

    value: float
    unit: str
    tag: Literal["measured", "derived", "assumed"]
    source: str

    @classmethod
    def of(cls, q: Q) -> QRecord:
        return cls(value=q.scalar, unit=q.unit, tag=str(q.tag), source=q.source)  # type: ignore[arg-type]

    def q(self, label: str = "") -> Q:
        source = f"{label}: {self.source}" if label else self.source
        return Q(self.value, self.unit, Tag.parse(self.tag), source)


class ConstantRecord(QRecord):
    """A fitted constant (its source says what pinned it) and the built-in value it replaces."""

    builtin: float


class InputRecord(BaseModel):
    model_config = _STRICT

    role: Literal["dense", "deepep", "kernel-log"]
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(ge=0)
    benchmark_id: str | None = None
    aiperf_version: str | None = None
    schema_version: str | None = None
    export_format: str | None = None
    concurrency: int | None = None
    comms: int | None = None


class KernelRecord(BaseModel):
    """One transport refitted to a kernel log (beta: the cost per message; the latency of leaving
    the node and the signal ratio are the built-in fit's), and the log's medians at its shape."""

    model_config = _STRICT

    transport: str
    instance: str
    ep: int = Field(gt=0)
    tokens: int = Field(gt=0)
    hidden: int = Field(gt=0)
    topk: int = Field(gt=0)
    experts: int = Field(gt=0)
    comms: int = Field(gt=0)
    qps: int = Field(gt=0)
    reference_lanes: float = Field(gt=0)
    dispatch_alpha_us: QRecord
    combine_alpha_us: QRecord
    dispatch_beta_us: ConstantRecord
    combine_beta_us: ConstantRecord
    signal_ratio: QRecord
    dispatch_p50_us: QRecord | None = None
    combine_p50_us: QRecord | None = None
    total_p50_us: QRecord | None = None

    @model_validator(mode="after")
    def _physical(self) -> KernelRecord:
        for name in (
            "dispatch_alpha_us",
            "combine_alpha_us",
            "dispatch_beta_us",
            "combine_beta_us",
            "dispatch_p50_us",
            "combine_p50_us",
            "total_p50_us",
        ):
            _check_physical(getattr(self, name), "us", name)
        return self


class PairRecord(BaseModel):
    """The derived A/B figures of one cell (DeepEP run and its dense twin)."""

    model_config = _STRICT

    cell: str
    tax_ms: QRecord
    tax_spread_ms: QRecord | None = None
    tax_from_per_user_ms: QRecord | None = None
    per_user_ratio: QRecord | None = None
    aggregate_ratio: QRecord | None = None
    ttft_ratio: QRecord | None = None
    steady_aggregate_ratio: QRecord | None = None  # less a cold start (io/aiperf/cold_start.py)


class MultiCommRecord(BaseModel):
    model_config = _STRICT

    concurrency: int
    comms_low: int
    comms_high: int
    itl_ratio: QRecord
    aggregate_ratio: QRecord | None = None
    per_user_ratio: QRecord | None = None


class ConstantsRecord(BaseModel):
    """The engine constants of the step model (physics/step.py `EngineConstants`)."""

    model_config = _STRICT

    launch_us: ConstantRecord
    step_us: ConstantRecord
    proxy_fixed_us: ConstantRecord
    proxy_lane_us: ConstantRecord
    ttft_steps: ConstantRecord

    def get(self, name: str) -> ConstantRecord:
        return getattr(self, name)

    @model_validator(mode="after")
    def _physical(self) -> ConstantsRecord:
        for name in CONSTANTS:
            _check_physical(self.get(name), "steps" if name == "ttft_steps" else "us", name)
        return self


class ResidualRecord(BaseModel):
    model_config = _STRICT

    cell: str
    arm: str  # the leg; schema 3 names the key `arm`
    quantity: Literal["step_ms", "tax_ms", "ttft_ms"]
    measured: float
    model: float
    residual: float


class Profile(BaseModel):
    """A calibration profile (schema 3). Field names are the TOML keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    kind: Literal["deepep-calc calibration profile"]
    schema_version: Literal[3]
    created_at: str
    tool_version: str
    scenario: Scenario
    inputs: list[InputRecord] = Field(min_length=1)
    constants: ConstantsRecord
    measured: list[Cell] = Field(alias="cells", min_length=1)  # `cells()` is the hook's method
    kernel: list[KernelRecord] = Field(default_factory=list, max_length=1)
    pairs: list[PairRecord] = Field(default_factory=list)
    multicomm: list[MultiCommRecord] = Field(default_factory=list)
    residuals: list[ResidualRecord] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    _name: str = PrivateAttr("")  # the file name, set when written or read

    # hooks the core calls ---------------------------------------------------------------------
    @property
    def label(self) -> str:
        """How sources name this profile: by its file name."""
        return f"profile {self._name}" if self._name else "calibration profile"

    @property
    def engine(self) -> str:
        return self.measured[0].engine

    def cells(self) -> list[Cell]:
        """The user's cells, their source prefixed with this profile's file name."""
        return [c.copy(source=f"{self.label}: {c.source}") for c in self.measured]

    @property
    def graphs(self) -> bool:
        return self.measured[0].cuda_graphs

    def engine_constants(self) -> EngineConstants:
        return EngineConstants(**{k: self.constants.get(k).q(self.label) for k in CONSTANTS})

    def apply(self, table: Table, r: Resolved) -> Table:
        """The table with this profile's engine constants (its engine and graph mode) and its
        refitted transport in place."""
        if r.engine.name != self.engine:
            raise InputError(
                "--calibration",
                self._name,
                f"--engine {self.engine}: the profile's constants were fitted on {self.engine} runs, "
                f"not {r.engine.name}",
            )
        table = table.with_engine(self.engine, self.graphs, self.engine_constants())
        for k in self.kernel:
            table = table.with_transport(k.transport, self._kernel_fit(k))
        return table

    def _kernel_fit(self, k: KernelRecord) -> TransportFit:
        return TransportFit(
            k.dispatch_alpha_us.q(self.label),
            k.combine_alpha_us.q(self.label),
            k.dispatch_beta_us.q(self.label),
            k.combine_beta_us.q(self.label),
            k.reference_lanes,
            k.signal_ratio.q(self.label),
        )

    def kernel_fit(self, transport: str) -> TransportFit | None:
        """The transport refitted to this profile's kernel log, else None."""
        for k in self.kernel:
            if k.transport == transport:
                return self._kernel_fit(k)
        return None

    # size: the six arguments are a kernel query's own key, matched field by field against the log
    def kernel_measured(
        self, transport: str, instance: str, ep: int, shape: KernelShape, comms: int, qps: int
    ) -> dict[str, Q] | None:
        """The log's own medians (measured) when a kernel query is exactly the logged one."""
        for k in self.kernel:
            if (
                (k.transport, k.instance, k.ep, k.comms, k.qps) == (transport, instance, ep, comms, qps)
                and (k.tokens, k.hidden) == (shape.tokens, shape.hidden)
                and (k.topk, k.experts) == (shape.topk, shape.experts)
                and shape.dispatch_dtype == "fp8"
                and k.dispatch_p50_us is not None
                and k.combine_p50_us is not None
            ):
                d, c = k.dispatch_p50_us.q(self.label), k.combine_p50_us.q(self.label)
                return {"dispatch_us": d, "combine_us": c, "total_us": (d + c).as_("us")}
        return None


# `Cell` and `Scenario` are dataclasses whose annotations name their constraints as strings
# (base/records.py): the profile's validator is built with those names bound.
Profile.model_rebuild(_types_namespace=constraint_names())
