"""Turn one parsed export, whatever its generation, into a typed, checked `AIPerfRun`.

Why one builder for every generation: the readers differ only in where they find the metric
blocks and the configuration; which statistics we take, how they are checked, and which doubts
the user is told about must be the same for a flat JSON, a records JSON and a CSV.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Q
from deepep_calc.fit.pairs import OSL_TOLERANCE  # the A/B's tolerance, warned about here already
from deepep_calc.io.aiperf.cold_start import cold_start
from deepep_calc.io.aiperf.metrics import CORE_TAGS, Blocks, check_itl_against_per_user, number
from deepep_calc.io.aiperf.names import NameHints, normalise_model, parse_export_name, source_label
from deepep_calc.io.aiperf.run import AIPerfRun, Export
from deepep_calc.io.aiperf.workload import (
    check_lengths,
    config_concurrency,
    config_lengths,
    config_model,
    dig,
)

KNOWN_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")
"""Schema versions whose layout this reader was written against."""


def _error_count(blocks: Blocks, summary: Any) -> int:
    counted = blocks.count("error_request_count")
    if counted is not None:
        return counted
    if isinstance(summary, list):
        total = 0
        for entry in summary:
            if isinstance(entry, Mapping):
                n = number(entry.get("count"))
                total += int(n) if n is not None else 1
        return total
    return 0


@dataclass(frozen=True)
class _Stats:
    """The statistics an `AIPerfRun` carries, read once from the export's metric blocks."""

    itl: Q | None
    itl_std: Q | None
    itl_p50: Q | None
    itl_count: Q | None
    ttft: Q | None
    ttft_p50: Q | None
    ttft_max: Q | None  # only the cold-start check reads these three
    duration: Q | None
    output_tokens: Q | None
    per_user: Q | None
    aggregate: Q | None
    latency: Q | None
    isl_measured: Q | None
    osl_measured: Q | None
    request_count: int | None
    error_count: int


@dataclass(frozen=True)
class _Workload:
    """What the export's configuration says was run: load, model, requested lengths, streaming."""

    concurrency: int | None
    model: str | None
    tokenizer: str | None
    isl_req: float | None
    osl_req: float | None
    streaming: bool | None


def build_run(export: Export) -> AIPerfRun:
    """Check and type an export's metric blocks and workload; collect the doubts about it.

    Raises `FileInputError` when the export holds no metric we know or a block we use is
    damaged; everything that only makes the run suspect becomes a warning on it.
    """
    path, metrics = export.path, export.metrics
    _require_metrics(export)
    b = Blocks(path, metrics, source_label(path, export.benchmark_id))
    warnings: list[str] = []
    hints = _name_hints(export)
    s = _read_stats(b, export.error_summary)
    check_itl_against_per_user(path, metrics, s.itl, s.per_user)
    w = _workload(export, hints, warnings)
    steady = _steady_state(export, s, w.concurrency, warnings)
    warnings += _doubts(export, s, streaming=w.streaming, osl_req=w.osl_req)
    return AIPerfRun(
        path=path,
        benchmark_id=export.benchmark_id,
        schema_version=export.schema_version,
        aiperf_version=export.aiperf_version,
        export_format=export.fmt,
        model=normalise_model(w.model, w.tokenizer),
        model_exported=w.model,
        concurrency=w.concurrency,
        isl_requested=w.isl_req,
        osl_requested=w.osl_req,
        isl_measured=s.isl_measured,
        osl_measured=s.osl_measured,
        streaming=w.streaming,
        was_cancelled=export.was_cancelled,
        error_count=s.error_count,
        request_count=s.request_count,
        itl_ms=s.itl,
        itl_std_ms=s.itl_std,
        itl_p50_ms=s.itl_p50,
        itl_count=s.itl_count,
        ttft_ms=s.ttft,
        ttft_p50_ms=s.ttft_p50,
        per_user_tok_s=s.per_user,
        aggregate_tok_s=s.aggregate,
        request_latency_ms=s.latency,
        warnings=warnings,
        steady_aggregate_tok_s=steady,
        engine=hints.engine,
        engine_version=hints.engine_version,
        leg=hints.leg,
        leg_label=hints.leg_label,
        comms=hints.comms,
        metrics=dict(metrics),
    )


def _require_metrics(export: Export) -> None:
    """Refuse an export with none of the metric blocks every run must have."""
    if not any(tag in export.metrics for tag in CORE_TAGS):
        raise FileInputError(
            export.path,
            "no AIPerf metric blocks (expected e.g. inter_token_latency, request_latency, "
            "output_token_throughput)",
        )


def _name_hints(export: Export) -> NameHints:
    """Engine, leg and load read from the file's name, or its folder's when the file says nothing."""
    path = export.path
    hints = parse_export_name(path.name)
    if hints == NameHints() and path.parent.name:
        hints = parse_export_name(path.parent.name)
    return hints


def _read_stats(b: Blocks, error_summary: Any) -> _Stats:
    """Every statistic the run carries; a damaged block we need fails the import here."""
    return _Stats(
        itl=b.stat("inter_token_latency", "avg", "ms", time=True),
        itl_std=b.stat("inter_token_latency", "std", "ms", time=True),
        itl_p50=b.stat("inter_token_latency", "p50", "ms", time=True),
        itl_count=b.stat("inter_token_latency", "count", "requests"),
        ttft=b.stat("time_to_first_token", "avg", "ms", time=True),
        ttft_p50=b.stat("time_to_first_token", "p50", "ms", time=True),
        # only the cold-start check reads these: a damaged one skips the check, it fails no import
        ttft_max=_optional(b, "time_to_first_token", "max", "ms", time=True),
        duration=_optional(b, "benchmark_duration", "avg", "ms", time=True),
        output_tokens=_optional(b, "total_output_tokens", "avg", "tokens"),
        per_user=b.stat("output_token_throughput_per_user", "avg", "tok/s/user"),
        aggregate=b.stat("output_token_throughput", "avg", "tok/s"),
        latency=b.stat("request_latency", "avg", "ms", time=True),
        isl_measured=b.stat("input_sequence_length", "avg", "tokens"),
        osl_measured=b.stat("output_sequence_length", "avg", "tokens"),
        request_count=b.count("request_count"),
        error_count=_error_count(b, error_summary),
    )


def _workload(export: Export, hints: NameHints, warnings: list[str]) -> _Workload:
    """The configuration's workload; a concurrency only the file name states is taken, with a warning."""
    path, config = export.path, export.config
    concurrency = config_concurrency(path, config, export.cli_command)
    if concurrency is None and hints.concurrency is not None:
        concurrency = hints.concurrency
        warnings.append(f"concurrency {concurrency} taken from the file name: the export does not state it")
    elif concurrency is not None and hints.concurrency is not None and hints.concurrency != concurrency:
        warnings.append(
            f"the file name says concurrency {hints.concurrency} but the export ran "
            f"{concurrency}; using {concurrency}"
        )
    exported_model, tokenizer = config_model(config)
    isl_req, osl_req = config_lengths(config)
    check_lengths(path, isl_req, osl_req)
    streaming_raw = dig(config, "endpoint", "streaming")
    streaming = streaming_raw if isinstance(streaming_raw, bool) else None
    return _Workload(concurrency, exported_model, tokenizer, isl_req, osl_req, streaming)


def _steady_state(export: Export, s: _Stats, concurrency: int | None, warnings: list[str]) -> Q | None:
    """The aggregate less a first-wave cold start, when the statistics show one (warned about)."""
    cold = cold_start(
        ttft_p50_ms=_value(s.ttft_p50),
        ttft_mean_ms=_value(s.ttft),
        ttft_max_ms=_value(s.ttft_max),
        concurrency=concurrency,
        requests=s.request_count,
        duration_s=None if s.duration is None else s.duration.value / 1000.0,
        output_tokens=_value(s.output_tokens),
    )
    if cold is None or concurrency is None or s.aggregate is None:
        return None
    steady = Q.derived(
        cold.steady_aggregate_tok_s,
        "tok/s",
        f"{source_label(export.path, export.benchmark_id)}: output tokens / (benchmark duration - "
        f"{cold.wait_s:.3f} s of cold start)",
    )
    warnings.append(
        f"{cold.words(concurrency)}; the aggregate includes that wait: "
        f"{s.aggregate.value:,.2f} tok/s as measured, {steady.value:,.2f} at steady state. "
        "Warm the server up before benchmarking"
    )
    return steady


def _optional(b: Blocks, tag: str, stat: str, unit: str, *, time: bool = False) -> Q | None:
    try:
        return b.stat(tag, stat, unit, time=time)
    except FileInputError:
        return None


def _value(q: Q | None) -> float | None:
    return None if q is None else float(q.value)


def _doubts(export: Export, s: _Stats, *, streaming: bool | None, osl_req: float | None) -> list[str]:
    """Reasons to look twice at a usable run: layout, schema, cancellation, errors, streaming, OSL."""
    error_count, request_count, itl, osl_measured = s.error_count, s.request_count, s.itl, s.osl_measured
    fmt, schema_version, was_cancelled = export.fmt, export.schema_version, export.was_cancelled
    warnings: list[str] = []
    if fmt == "csv":
        warnings.append("CSV export: no benchmark id, model or requested lengths; prefer the JSON export")
    elif schema_version is None:
        warnings.append("no schema_version in the export; metrics were read by tag name")
    elif schema_version not in KNOWN_SCHEMA_VERSIONS:
        warnings.append(
            f"unknown schema_version {schema_version!r} (this reader knows "
            f"{KNOWN_SCHEMA_VERSIONS[0]}-{KNOWN_SCHEMA_VERSIONS[-1]}); metrics were read by tag "
            "name, check them"
        )
    if was_cancelled:
        warnings.append(
            "the run was cancelled (was_cancelled: true); its statistics cover only "
            "part of the planned requests"
        )
    if error_count > 0:
        of = f" of {request_count + error_count}" if request_count is not None else ""
        warnings.append(
            f"{error_count}{of} requests failed; the statistics describe only the requests that succeeded"
        )
    if streaming is False:
        warnings.append(
            "not a streaming run (endpoint.streaming is false): no inter-token "
            "latency, so no per-token step time or tax can be derived"
        )
    elif itl is None:
        warnings.append(
            "no inter_token_latency in the export (was the run streaming?): no "
            "per-token step time or tax can be derived"
        )
    if osl_req and osl_measured is not None:
        gap = abs(osl_measured.value - osl_req) / osl_req
        if gap > OSL_TOLERANCE:
            warnings.append(
                f"measured output length {osl_measured.value:.1f} differs from the requested "
                f"{osl_req:g} by {gap:.0%}; per-token figures may not match the requested shape "
                "(was ignore_eos set?)"
            )
    return warnings
