"""The two records the reader deals in: `Export` (one parsed file) and `AIPerfRun` (one run).

Why apart from the readers: every generation reader returns an `Export`, the builder turns it
into an `AIPerfRun`, and the A/B code consumes runs; holding both types here lets each of those
modules import them without importing one another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepep_calc.base.quantity import Q
from deepep_calc.io.aiperf.metrics import metric
from deepep_calc.io.aiperf.names import display_name, parse_export_name, source_label


@dataclass(frozen=True)
class Export:
    """One export as a generation reader leaves it: metric blocks by tag, plus what the file
    states about the run. Generation-neutral, so one builder checks and types every layout."""

    path: Path
    fmt: str  # the generation: "json", "json-records" or "csv"
    metrics: Mapping[str, Any]
    config: Mapping[str, Any] = field(default_factory=dict)
    benchmark_id: str | None = None
    schema_version: str | None = None
    aiperf_version: str | None = None
    was_cancelled: bool = False
    error_summary: Any = None
    cli_command: str | None = None


@dataclass(frozen=True)
class AIPerfRun:
    """One AIPerf benchmark, read from one export file.

    Metric fields are `Q`s tagged measured (None when the export lacks them: a non-streaming run
    has no ITL). `concurrency`, `model` and the requested lengths describe the workload and are
    what an A/B must hold equal. `warnings` lists the reasons to look twice at this run.
    """

    path: Path
    benchmark_id: str | None
    schema_version: str | None
    aiperf_version: str | None
    export_format: str  # "json", "json-records" or "csv"
    model: str | None  # normalised (HF cache path or snapshot hash -> "org/name")
    model_exported: str | None  # as written in the export
    concurrency: int | None
    isl_requested: float | None
    osl_requested: float | None
    isl_measured: Q | None
    osl_measured: Q | None
    streaming: bool | None
    was_cancelled: bool
    error_count: int
    request_count: int | None
    itl_ms: Q | None
    itl_std_ms: Q | None
    itl_p50_ms: Q | None
    itl_count: Q | None
    ttft_ms: Q | None
    ttft_p50_ms: Q | None
    per_user_tok_s: Q | None
    aggregate_tok_s: Q | None
    request_latency_ms: Q | None
    warnings: list[str] = field(default_factory=list)
    # derived: the run less its first wave's wait for a cold start (io/aiperf/cold_start.py)
    steady_aggregate_tok_s: Q | None = None
    engine: str | None = None
    engine_version: str | None = None
    leg: str | None = None
    leg_label: str | None = None
    comms: int | None = None
    metrics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The provenance prefix every value of this run carries."""
        return source_label(self.path, self.benchmark_id)

    @property
    def name(self) -> str:
        return display_name(self.path)

    @property
    def instances(self) -> str | None:
        """The cluster its file name states (`2xp5en`), if it follows the naming convention:
        what a calibration's runs must share, asked of the run so the caller parses no name."""
        return parse_export_name(self.path.name).instances

    def metric(self, tag: str, stat: str = "avg") -> Q | None:
        """Any other statistic of the export as a measured `Q` (for fitters that need more)."""
        return metric(self.metrics, tag, stat, self.source)
