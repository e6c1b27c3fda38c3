"""Read AIPerf profile exports into typed runs, and pair a dense and a DeepEP run into an A/B.

Why this module exists: the calculator is calibrated to measured serving cells, and a user who
benchmarks their own cluster with AIPerf should be able to hand over those exports and get the
same kind of numbers back, each traceable to the file and the benchmark it came from. Every
number read here is a `Q` tagged `measured` whose source names the file and the benchmark id;
anything computed from them (the per-token tax, the ratios) comes out `derived` through `Q`
arithmetic, so a fitted constant can never pose as an observation.

AIPerf has changed its export over releases, so the reader accepts each generation we know:
the flat JSON layout (schema 1.0-1.5, workload in `input_config.phases` or the legacy
`input_config.loadgen`), the older JSON layout with metric blocks under `"records"`, and the CSV
export keyed by display names. A file that is not an export is an error (one line, naming the
file and the problem); a run that is an export but should not be trusted blindly (cancelled,
failed requests, not streaming, short outputs, unknown schema) imports with warnings, because
the user may still want to look at it, but must be told.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepep_calc.errors import FileInputError, InputError, printable
from deepep_calc.quantity import Q, qmap

KNOWN_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")
"""Schema versions whose layout this reader was written against."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""A summary export is tens of kB; anything this large is the wrong file (per-request JSONL?)."""

MAX_METRIC = 1e12
"""No AIPerf statistic (ms, tok/s, tokens, requests) comes near this; beyond it the file is damaged."""
MIN_POSITIVE = 1e-6
"""Floor of the means the A/B divides by: below it (1 ns per token, a token per 11 days) a ratio
overflows to inf rather than saying anything."""

# Means that a run which streamed any token cannot report as 0, and that the A/B divides by.
_POSITIVE = {
    ("inter_token_latency", "avg"),
    ("output_token_throughput_per_user", "avg"),
    ("output_token_throughput", "avg"),
}

OSL_TOLERANCE = 0.05
"""Relative gap between measured and requested output length above which we warn: per-token
figures from runs that stopped early (no ignore_eos) are not comparable to the requested shape."""

EXPORT_JSON = "profile_export_aiperf.json"
EXPORT_CSV = "profile_export_aiperf.csv"

# Metric tags whose presence marks a document as an AIPerf summary. A file with none of them is
# refused: whatever it is, there is nothing in it to calibrate against.
CORE_TAGS = (
    "inter_token_latency",
    "time_to_first_token",
    "request_latency",
    "output_token_throughput",
    "output_token_throughput_per_user",
    "request_throughput",
    "output_sequence_length",
)

# Time metrics are normalised to milliseconds whatever unit a release wrote.
_TIME_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}

_KNOWN_ENGINES = {
    "trtllm": "trtllm",
    "tensorrt-llm": "trtllm",
    "trt-llm": "trtllm",
    "vllm": "vllm",
    "sglang": "sglang",
}
_ENGINE_RE = re.compile(r"^(tensorrt-llm|trt-llm|trtllm|vllm|sglang)(?:[-_]?v?(\d[\w.]*))?$", re.I)
_HF_CACHE_RE = re.compile(r"models--([^/\\]+?)--([^/\\]+)")
_SNAPSHOT_RE = re.compile(r"[0-9a-f]{40}")
_CLI_CONCURRENCY_RE = re.compile(r"--concurrency[= ]+'?(\d+)")
_CONCURRENCY_WORD_RE = re.compile(r"(?:^|[-_.])(?:concurrency|conc)[-_]?(\d+)(?=$|[-_.])", re.I)


# --------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class NameHints:
    """What the shared file-name convention says about a run.

    `<engine>_<model>_<layout>_<instances>_<arm>_c<concurrency>_isl<ISL>.json`. The CSV export
    carries no configuration at all, so for it the name is the only record of the workload;
    for JSON it is a cross-check. Every field is optional: users name files as they like.
    """

    engine: str | None = None
    engine_version: str | None = None
    arm: str | None = None  # "dense" or "deepep"
    arm_label: str | None = None  # the token as written, e.g. "deepep-epnc8"
    comms: int | None = None  # EP_NUM_COMMS from "epnc<K>"
    concurrency: int | None = None
    isl: int | None = None


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
    engine: str | None = None
    engine_version: str | None = None
    arm: str | None = None
    arm_label: str | None = None
    comms: int | None = None
    metrics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The provenance prefix every value of this run carries."""
        return _source_label(self.path, self.benchmark_id)

    @property
    def name(self) -> str:
        return _display_name(self.path)

    def metric(self, tag: str, stat: str = "avg") -> Q | None:
        """Any other statistic of the export as a measured `Q` (for fitters that need more)."""
        block = self.metrics.get(tag)
        if not isinstance(block, Mapping):
            return None
        value = _number(block.get(stat))
        if value is None:
            return None
        unit = str(block.get("unit", ""))
        return Q.measured(value, unit, f"{self.source}: {tag}.{stat}")


@dataclass(frozen=True)
class ABPair:
    """A dense run and a DeepEP run of the same workload, and what differs between them.

    The tax is the per-token step-time difference, the quantity the physics must reproduce at
    the calibration point. The spread is the standard error of that difference (each arm's ITL
    std over its request count, combined in quadrature): with n = 1 run per cell it is the only
    honest width we can attach. Ratios are DeepEP over dense, so below 1 means DeepEP is slower.
    """

    dense: AIPerfRun
    deepep: AIPerfRun
    tax_ms: Q
    tax_spread_ms: Q | None
    tax_from_per_user_ms: Q | None
    step_ms_dense: Q
    step_ms_deepep: Q
    per_user_dense: Q | None
    per_user_deepep: Q | None
    per_user_ratio: Q | None
    aggregate_ratio: Q | None
    ttft_ratio: Q | None
    ttft_basis: str | None  # "p50" or "avg": which TTFT statistic the ratio uses
    warnings: list[str] = field(default_factory=list)

    @property
    def concurrency(self) -> int | None:
        return self.dense.concurrency


# --------------------------------------------------------------------------------------------
# file access shared with the kernel-log reader


def _stat_problem(path: Path, exc: OSError | ValueError) -> str:
    """Why a path cannot be opened, in words: a dangling or looping symlink is not just missing."""
    if isinstance(exc, ValueError):  # e.g. an embedded NUL byte
        return f"is not a usable file name ({_one_line(str(exc))})"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link loop; cannot read it"
    if isinstance(exc, FileNotFoundError):
        if path.is_symlink():
            return "no such file or directory (a symbolic link to a missing target)"
        return "no such file or directory"
    return f"cannot read it ({exc.strerror or exc})"


def stat_path(path: Path) -> os.stat_result:
    """`os.stat` (symlinks followed, as HF caches use them) with one-line errors."""
    try:
        return os.stat(path)
    except (OSError, ValueError) as exc:
        raise FileInputError(path, _stat_problem(path, exc)) from None


def read_text_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a user-supplied text file with the guards every importer needs.

    Refuses before reading anything oversized (a wrong file should not cost memory) or that is
    not a regular file (reading a FIFO would block forever), and turns empty, unreadable and
    non-UTF-8 files into one-line errors naming the file. Symbolic links are followed.
    """
    st = stat_path(path)
    if stat.S_ISDIR(st.st_mode):
        raise FileInputError(path, "is a directory; expected a file")
    if not stat.S_ISREG(st.st_mode):
        raise FileInputError(path, "is not a regular file (a FIFO, socket or device); expected a file")
    size = st.st_size
    if size > max_bytes:
        raise FileInputError(
            path,
            f"file is {size / 1e6:.1f} MB, over the {max_bytes // (1024 * 1024)} MB limit; "
            "refusing to read it (a summary export is tens of kB)",
        )
    try:
        # Non-blocking open, then fstat: a file swapped for a FIFO after the stat cannot hang us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise FileInputError(path, "is not a regular file; expected a file")
            data = fh.read(max_bytes + 1)
    except (OSError, ValueError) as exc:
        raise FileInputError(path, _stat_problem(path, exc)) from None
    if len(data) > max_bytes:  # grew between stat and read
        raise FileInputError(path, f"file is over the {max_bytes // (1024 * 1024)} MB limit")
    if not data:
        raise FileInputError(path, "the file is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileInputError(
            path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not text.strip():
        raise FileInputError(path, "the file is empty (whitespace only)")
    return text


def _one_line(text: str) -> str:
    """Errors are shown as one line; exception texts from parsers are squeezed to fit, and
    control characters escaped (`errors.printable`)."""
    return printable(" ".join(str(text).split()))


# --------------------------------------------------------------------------------------------
# names, models, numbers


def parse_export_name(name: str) -> NameHints:
    """Read engine, arm, comms, concurrency and ISL from a file or folder name, if it follows
    the convention; unknown tokens are ignored."""
    stem = name
    for suffix in (".json", ".csv", ".log", ".txt"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    parts = stem.split("_")
    engine = engine_version = arm = arm_label = None
    comms = concurrency = isl = None
    m = _ENGINE_RE.match(parts[0]) if parts else None
    if m:
        engine = _KNOWN_ENGINES[m.group(1).lower()]
        engine_version = m.group(2)
    for token in parts[1:] if m else parts:  # a folder may be just "c32" or "deepep-epnc8"
        low = token.lower()
        if (c := re.fullmatch(r"c(\d+)", low)) is not None:
            concurrency = int(c.group(1))
        elif (i := re.fullmatch(r"isl(\d+)", low)) is not None:
            isl = int(i.group(1))
        elif low.startswith(("dense", "allgather")):
            arm, arm_label = "dense", token
        elif low.startswith("deepep"):
            arm, arm_label = "deepep", token
            if (k := re.search(r"epnc(\d+)", low)) is not None:
                comms = int(k.group(1))
    if concurrency is None and (c := _CONCURRENCY_WORD_RE.search(stem)) is not None:
        concurrency = int(c.group(1))  # AIPerf's own artifact folders: ...-concurrency32
    return NameHints(engine, engine_version, arm, arm_label, comms, concurrency, isl)


def normalise_model(name: str | None, tokenizer: str | None = None) -> str | None:
    """Reduce the many spellings of one checkpoint to `org/name` so two arms can be compared.

    Engines are launched with a hub id, an HF-cache path or a bare snapshot hash; the same
    weights must not look like different models to the A/B check.
    """
    if not name:
        return None
    text = name.strip().rstrip("/\\")
    if (m := _HF_CACHE_RE.search(text)) is not None:
        return f"{m.group(1)}/{m.group(2)}"
    if (
        _SNAPSHOT_RE.fullmatch(text)
        and tokenizer
        and text in tokenizer
        and (t := _HF_CACHE_RE.search(tokenizer)) is not None
    ):
        return f"{t.group(1)}/{t.group(2)}"
    return text


def _number(value: Any) -> float | None:
    """A finite JSON number as float; bools, strings, null and NaN are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def _display_name(path: Path) -> str:
    """File name, with the folder when the name is AIPerf's generic one (else it says nothing)."""
    if path.name.startswith("profile_export") and path.parent.name:
        return f"{path.parent.name}/{path.name}"
    return path.name


def _source_label(path: Path, benchmark_id: str | None) -> str:
    if benchmark_id:
        return f"AIPerf {_display_name(path)} benchmark {benchmark_id}"
    return f"AIPerf {_display_name(path)} (no benchmark id)"


# --------------------------------------------------------------------------------------------
# locating and parsing


def find_export(folder: Path) -> Path:
    """Pick the export inside an AIPerf artifact folder.

    The JSON is preferred (it carries the configuration and the benchmark id); the CSV is the
    fallback. Several candidate JSONs that are not the canonical name are ambiguous, and we
    would rather ask than guess which run the user meant.
    """
    canonical = folder / EXPORT_JSON
    if canonical.is_file():
        return canonical
    jsons = sorted(p for p in folder.glob("*aiperf*.json") if p.is_file())
    if len(jsons) == 1:
        return jsons[0]
    if len(jsons) > 1:
        names = ", ".join(p.name for p in jsons[:4]) + (", ..." if len(jsons) > 4 else "")
        raise FileInputError(folder, f"{len(jsons)} candidate AIPerf exports ({names}); pass one file")
    if (folder / EXPORT_CSV).is_file():
        return folder / EXPORT_CSV
    csvs = sorted(p for p in folder.glob("*aiperf*.csv") if p.is_file())
    if len(csvs) == 1:
        return csvs[0]
    raise FileInputError(
        folder,
        f"no AIPerf export in this folder (looked for {EXPORT_JSON}, *aiperf*.json, {EXPORT_CSV})",
    )


def load_aiperf(path: str | Path) -> AIPerfRun:
    """Import one AIPerf run from an export file or an artifact folder.

    Raises `FileInputError` (one line naming the file) when the input is not a usable export;
    returns a run with `warnings` when it is usable but suspect.
    """
    p = Path(path)
    if stat.S_ISDIR(stat_path(p).st_mode):
        p = find_export(p)
    text = read_text_file(p)
    head = text.lstrip()[:1]
    if p.suffix.lower() == ".csv" or (p.suffix.lower() != ".json" and head not in "{["):
        return _from_csv(p, text)
    return _from_json(p, text)


def _from_json(path: Path, text: str) -> AIPerfRun:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        body = text.rstrip()
        cut_in_string = exc.msg.startswith("Unterminated string") and "\n" not in body[exc.pos :]
        if exc.pos >= len(body) or cut_in_string:
            raise FileInputError(
                path,
                f"truncated JSON: the document ends at line {exc.lineno} before it is complete",
            ) from None
        raise FileInputError(
            path, f"not valid JSON ({_one_line(exc.msg)} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise FileInputError(path, "not valid JSON (nested too deeply)") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(path, "not valid JSON (a number with thousands of digits)") from None
    if not isinstance(doc, dict):
        raise FileInputError(
            path, f"JSON top level is {_json_type(doc)}, expected an object (an AIPerf export)"
        )

    records = doc.get("records")
    if records is not None and isinstance(records, dict) and any(t in records for t in CORE_TAGS):
        metrics, fmt = records, "json-records"
    elif records is not None and not isinstance(records, dict):
        raise FileInputError(
            path,
            f"'records' is {_json_type(records)}, expected an object of metric blocks",
            field="records",
        )
    else:
        metrics, fmt = doc, "json"

    config = doc.get("input_config")
    if config is not None and not isinstance(config, dict):
        raise FileInputError(
            path,
            f"'input_config' is {_json_type(config)}, expected an object",
            field="input_config",
        )
    bid = doc.get("benchmark_id")
    run_info = doc.get("run_info") if isinstance(doc.get("run_info"), dict) else {}
    if not isinstance(bid, str) or not bid:
        info_id = run_info.get("benchmark_id")
        bid = info_id if isinstance(info_id, str) else None
    schema = doc.get("schema_version")
    version = doc.get("aiperf_version")
    return _build(
        path=path,
        fmt=fmt,
        metrics=metrics,
        config=config or {},
        benchmark_id=bid or None,
        schema_version=str(schema) if schema is not None else None,
        aiperf_version=str(version) if version is not None else None,
        was_cancelled=doc.get("was_cancelled") is True,
        error_summary=doc.get("error_summary"),
        cli_command=run_info.get("cli_command") if isinstance(run_info.get("cli_command"), str) else None,
    )


def _json_type(value: Any) -> str:
    """JSON's name for a value's type, with its article ("an array", "a string")."""
    name = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "number",
        float: "number",
    }.get(type(value), type(value).__name__)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _csv_tag(label: str) -> tuple[str, str]:
    """Split a display name like 'Inter Token Latency (ms)' into a tag and a unit.

    The CSV has no tags; AIPerf's display names are the tag words capitalised, so lower-casing
    and joining with underscores recovers the tags we need (inter_token_latency, ...).
    """
    label = label.strip()
    unit = ""
    if (m := re.fullmatch(r"(.*?)\s*\(([^()]*)\)", label)) is not None:
        label, unit = m.group(1), m.group(2)
    tag = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    return tag, unit


def _csv_cell(text: str) -> float | str | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return text  # kept as text: the block check reports it if the metric is one we use
    return value if math.isfinite(value) else text


def _from_csv(path: Path, text: str) -> AIPerfRun:
    """Rebuild flat-layout metric blocks from the CSV's two metric tables.

    The first table is `Metric,avg,min,...` (record metrics), then a blank line, then
    `Metric,Value` (derived metrics); a GPU telemetry table may follow and is ignored. The CSV
    has no count column, so a block's count is recovered as sum / avg where both exist.
    """
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise FileInputError(path, f"not a readable CSV ({_one_line(str(exc))})") from None
    metrics: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    seen_table = False
    for row in rows:
        if not row or not any(cell.strip() for cell in row):
            header = None
            continue
        first = row[0].strip()
        if first.lower() == "metric":
            header = [cell.strip().lower() for cell in row]
            seen_table = True
            continue
        if header is None:
            continue  # telemetry or any other table: not ours
        tag, unit = _csv_tag(first)
        block: dict[str, Any] = {"unit": unit}
        for name, cell in zip(header[1:], row[1:], strict=False):
            value = _csv_cell(cell)
            if value is not None:
                block["avg" if name == "value" else name] = value
        avg, total = _number(block.get("avg")), _number(block.get("sum"))
        if "count" not in block and avg and total is not None and math.isfinite(total / avg):
            block["count"] = round(total / avg)
        metrics[tag] = block
    if not seen_table:
        raise FileInputError(path, "not an AIPerf CSV export (no table starting with a 'Metric' header)")
    return _build(
        path=path,
        fmt="csv",
        metrics=metrics,
        config={},
        benchmark_id=None,
        schema_version=None,
        aiperf_version=None,
        was_cancelled=False,
        error_summary=None,
        cli_command=None,
    )


# --------------------------------------------------------------------------------------------
# building a run


class _Blocks:
    """Typed access to metric blocks; a block we use that has the wrong shape is an error."""

    def __init__(self, path: Path, metrics: Mapping[str, Any], source: str) -> None:
        self.path, self.metrics, self.source = path, metrics, source

    def block(self, tag: str) -> Mapping[str, Any] | None:
        raw = self.metrics.get(tag)
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise FileInputError(
                self.path,
                f"metric '{tag}' is {_json_type(raw)}, expected an object with unit and avg",
                field=tag,
            )
        if _number(raw.get("avg")) is None:
            raise FileInputError(
                self.path, f"metric '{tag}' has no numeric avg (got {raw.get('avg')!r})", field=tag
            )
        return raw

    def stat(self, tag: str, stat: str, unit: str, *, time: bool = False) -> Q | None:
        block = self.block(tag)
        if block is None:
            return None
        raw = block.get(stat)
        if raw is None:
            return None
        value = _number(raw)
        if value is None:
            raise FileInputError(self.path, f"metric '{tag}' has a non-numeric {stat} ({raw!r})", field=tag)
        self._check_range(tag, stat, value)
        if time:
            exported = str(block.get("unit") or "ms").strip()
            scale = _TIME_TO_MS.get(exported)
            if scale is None:
                raise FileInputError(
                    self.path,
                    f"metric '{tag}' is in {exported!r}, expected a time unit (ms)",
                    field=tag,
                )
            value *= scale
        return Q.measured(value, unit, f"{self.source}: {tag}.{stat}")

    def _check_range(self, tag: str, stat: str, value: float) -> None:
        """Statistics are never negative (nor 0 where the A/B divides by them) nor absurdly large."""
        positive = (tag, stat) in _POSITIVE
        low = f"at least {MIN_POSITIVE:g}" if positive else "at least 0"
        if value < 0 or value > MAX_METRIC or (positive and value < MIN_POSITIVE):
            raise FileInputError(
                self.path, f"metric '{tag}' has {stat} = {value:g}; expected {low} and below 1e12", field=tag
            )

    def count(self, tag: str) -> int | None:
        """Scalar counts (request_count, error_request_count); a bare number is tolerated."""
        raw = self.metrics.get(tag)
        if raw is None:
            return None
        value = _number(raw) if not isinstance(raw, Mapping) else None
        if value is None:
            block = self.block(tag)
            value = _number(block.get("avg")) if block is not None else None
        if value is None:
            return None
        self._check_range(tag, "count", value)
        return round(value)


# AIPerf's per-user throughput is the per-request reciprocal of the inter-token latency, so it
# sits within a few per cent of 1000 / mean ITL on real runs (within 2 % on every shared
# export). A factor of 2 apart is no statistics: it is a mislabelled unit (ms written as s),
# and importing it would put a step time off by 1000x into "measured" cells.
ITL_CROSS_CHECK_FACTOR = 2.0


def _check_itl_against_per_user(
    path: Path, metrics: Mapping[str, Any], itl: Q | None, per_user: Q | None
) -> None:
    """Refuse an export whose ITL and per-user throughput describe different step times."""
    if itl is None or per_user is None or per_user.scalar <= 0 or itl.scalar <= 0:
        return
    implied = 1000.0 / per_user.scalar
    if 1 / ITL_CROSS_CHECK_FACTOR <= itl.scalar / implied <= ITL_CROSS_CHECK_FACTOR:
        return
    block = metrics.get("inter_token_latency") or {}
    unit = str(block.get("unit") or "ms").strip()
    raw = itl.scalar / _TIME_TO_MS.get(unit, 1.0)
    agree = [
        u
        for u, scale in _TIME_TO_MS.items()
        if 1 / ITL_CROSS_CHECK_FACTOR <= raw * scale / implied <= ITL_CROSS_CHECK_FACTOR
    ]
    hint = f"; its value reads right in {agree[0]!r}: fix the export's unit" if agree else ""
    raise FileInputError(
        path,
        f"metric 'inter_token_latency' is {raw:g} {unit} per token ({itl.scalar:,.1f} ms), but "
        f"output_token_throughput_per_user is {per_user.scalar:g} tok/s, i.e. {implied:,.1f} ms per "
        f"token: the two disagree by more than {ITL_CROSS_CHECK_FACTOR:g}x, so the ITL unit is "
        f"mislabelled or the export is damaged{hint}",
        field="inter_token_latency",
    )


def _dig(obj: Any, *keys: str | int) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(obj, list) or len(obj) <= key:
                return None
        elif not isinstance(obj, Mapping):
            return None
        obj = obj[key] if isinstance(key, int) else obj.get(key)
    return obj


def _config_concurrency(path: Path, config: Mapping[str, Any], cli: str | None) -> int | None:
    """Concurrency from the profiling phase, the legacy loadgen block, or the recorded command."""
    raw: Any = None
    phases = config.get("phases")
    if isinstance(phases, list):
        named = [p for p in phases if isinstance(p, Mapping) and p.get("name") == "profiling"]
        if not named and len(phases) == 1 and isinstance(phases[0], Mapping):
            named = phases
        if named:
            raw = named[0].get("concurrency")
    if raw is None:
        raw = _dig(config, "loadgen", "concurrency")
    if raw is None and cli and (m := _CLI_CONCURRENCY_RE.search(cli)) is not None:
        raw = int(m.group(1))
    if raw is None:
        return None
    value = _number(raw)
    if value is None or value <= 0 or value != int(value):
        raise FileInputError(
            path,
            f"concurrency in input_config is {raw!r}, expected a positive whole number",
            field="concurrency",
        )
    return int(value)


def _config_model(config: Mapping[str, Any]) -> tuple[str | None, str | None]:
    items = _dig(config, "models", "items")
    if isinstance(items, list) and items:
        first = items[0]
        name = first.get("name") if isinstance(first, Mapping) else first
    else:
        models = config.get("models")
        name = models[0] if isinstance(models, list) and models else None
        if name is None:
            name = _dig(config, "endpoint", "model_names", 0)
    tokenizer = _dig(config, "tokenizer", "name")
    return (
        name if isinstance(name, str) else None,
        tokenizer if isinstance(tokenizer, str) else None,
    )


def _config_lengths(config: Mapping[str, Any]) -> tuple[float | None, float | None]:
    isl = osl = None
    datasets = config.get("datasets")
    if isinstance(datasets, list):
        for ds in datasets:
            prompts = ds.get("prompts") if isinstance(ds, Mapping) else None
            if isinstance(prompts, Mapping):
                isl = _number(_dig(prompts, "isl", "mean"))
                osl = _number(_dig(prompts, "osl", "mean"))
                if isl is not None or osl is not None:
                    break
    if isl is None:
        isl = _number(_dig(config, "input", "prompt", "input_tokens", "mean"))
    if osl is None:
        osl = _number(_dig(config, "input", "prompt", "output_tokens", "mean"))
    return isl, osl


def _check_lengths(path: Path, isl: float | None, osl: float | None) -> None:
    """A requested length is a token count: positive and of a size a model can serve."""
    for name, value in (("ISL", isl), ("OSL", osl)):
        if value is not None and not 0 < value <= MAX_METRIC:
            raise FileInputError(
                path,
                f"input_config requests an {name} mean of {value:g} tokens; expected a positive count",
                field=name.lower(),
            )


def _error_count(blocks: _Blocks, summary: Any) -> int:
    counted = blocks.count("error_request_count")
    if counted is not None:
        return counted
    if isinstance(summary, list):
        total = 0
        for entry in summary:
            if isinstance(entry, Mapping):
                n = _number(entry.get("count"))
                total += int(n) if n is not None else 1
        return total
    return 0


def _build(
    *,
    path: Path,
    fmt: str,
    metrics: Mapping[str, Any],
    config: Mapping[str, Any],
    benchmark_id: str | None,
    schema_version: str | None,
    aiperf_version: str | None,
    was_cancelled: bool,
    error_summary: Any,
    cli_command: str | None,
) -> AIPerfRun:
    if not any(tag in metrics for tag in CORE_TAGS):
        raise FileInputError(
            path,
            "no AIPerf metric blocks (expected e.g. inter_token_latency, request_latency, "
            "output_token_throughput)",
        )
    source = _source_label(path, benchmark_id)
    b = _Blocks(path, metrics, source)
    warnings: list[str] = []

    hints = parse_export_name(path.name)
    if hints == NameHints() and path.parent.name:
        hints = parse_export_name(path.parent.name)

    itl = b.stat("inter_token_latency", "avg", "ms", time=True)
    itl_std = b.stat("inter_token_latency", "std", "ms", time=True)
    itl_p50 = b.stat("inter_token_latency", "p50", "ms", time=True)
    itl_count = b.stat("inter_token_latency", "count", "requests")
    ttft = b.stat("time_to_first_token", "avg", "ms", time=True)
    ttft_p50 = b.stat("time_to_first_token", "p50", "ms", time=True)
    per_user = b.stat("output_token_throughput_per_user", "avg", "tok/s/user")
    aggregate = b.stat("output_token_throughput", "avg", "tok/s")
    latency = b.stat("request_latency", "avg", "ms", time=True)
    isl_measured = b.stat("input_sequence_length", "avg", "tokens")
    osl_measured = b.stat("output_sequence_length", "avg", "tokens")
    request_count = b.count("request_count")
    error_count = _error_count(b, error_summary)
    _check_itl_against_per_user(path, metrics, itl, per_user)

    concurrency = _config_concurrency(path, config, cli_command)
    if concurrency is None and hints.concurrency is not None:
        concurrency = hints.concurrency
        warnings.append(f"concurrency {concurrency} taken from the file name: the export does not state it")
    elif concurrency is not None and hints.concurrency is not None and hints.concurrency != concurrency:
        warnings.append(
            f"the file name says concurrency {hints.concurrency} but the export ran "
            f"{concurrency}; using {concurrency}"
        )
    exported_model, tokenizer = _config_model(config)
    isl_req, osl_req = _config_lengths(config)
    _check_lengths(path, isl_req, osl_req)
    streaming_raw = _dig(config, "endpoint", "streaming")
    streaming = streaming_raw if isinstance(streaming_raw, bool) else None

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

    return AIPerfRun(
        path=path,
        benchmark_id=benchmark_id,
        schema_version=schema_version,
        aiperf_version=aiperf_version,
        export_format=fmt,
        model=normalise_model(exported_model, tokenizer),
        model_exported=exported_model,
        concurrency=concurrency,
        isl_requested=isl_req,
        osl_requested=osl_req,
        isl_measured=isl_measured,
        osl_measured=osl_measured,
        streaming=streaming,
        was_cancelled=was_cancelled,
        error_count=error_count,
        request_count=request_count,
        itl_ms=itl,
        itl_std_ms=itl_std,
        itl_p50_ms=itl_p50,
        itl_count=itl_count,
        ttft_ms=ttft,
        ttft_p50_ms=ttft_p50,
        per_user_tok_s=per_user,
        aggregate_tok_s=aggregate,
        request_latency_ms=latency,
        warnings=warnings,
        engine=hints.engine,
        engine_version=hints.engine_version,
        arm=hints.arm,
        arm_label=hints.arm_label,
        comms=hints.comms,
        metrics=dict(metrics),
    )


# --------------------------------------------------------------------------------------------
# A/B pairs and groups


def _length(run: AIPerfRun, which: str) -> tuple[float | None, bool]:
    """The run's ISL or OSL: the requested value when known (exact), else the measured mean."""
    requested = run.isl_requested if which == "isl" else run.osl_requested
    if requested is not None:
        return requested, True
    measured = run.isl_measured if which == "isl" else run.osl_measured
    return (measured.scalar if measured is not None else None), False


def check_pair(dense: AIPerfRun, deepep: AIPerfRun) -> list[str]:
    """Refuse an A/B whose arms ran different workloads; list the smaller doubts otherwise.

    A tax computed across different models, lengths or concurrencies would be a difference of
    workloads, not of MoE exchanges, so those mismatches are input errors. Everything that
    only weakens the comparison (different engines, a cancelled arm, ...) is a warning.
    """
    d_name, x_name = dense.name, deepep.name
    if dense.model and deepep.model and dense.model.lower() != deepep.model.lower():
        raise InputError(
            "model",
            deepep.model,
            f"the dense arm's model {dense.model!r} ({d_name}); the DeepEP arm ({x_name}) differs",
        )
    warnings: list[str] = []
    if not (dense.model and deepep.model):
        warnings.append("model not stated by both exports; cannot confirm both arms ran the same")
    for which in ("isl", "osl"):
        a, a_exact = _length(dense, which)
        b, b_exact = _length(deepep, which)
        if a is None or b is None:
            warnings.append(f"{which.upper()} not known for both arms; cannot confirm it matches")
            continue
        exact = a_exact and b_exact
        differs = a != b if exact else abs(a - b) > OSL_TOLERANCE * max(a, b)
        if differs:
            kind = "requested" if exact else "requested or measured"
            raise InputError(
                which,
                b,
                f"the dense arm's {kind} {which.upper()} {a:g} ({d_name}); the DeepEP arm "
                f"({x_name}) ran {b:g}",
            )
        if not exact:
            warnings.append(
                f"{which.upper()} compared on measured means ({a:g} vs {b:g}): the "
                "requested value is not in both exports"
            )
    if dense.concurrency is not None and deepep.concurrency is not None:
        if dense.concurrency != deepep.concurrency:
            raise InputError(
                "concurrency",
                deepep.concurrency,
                f"the dense arm's concurrency {dense.concurrency} ({d_name}); the DeepEP arm "
                f"({x_name}) ran {deepep.concurrency}",
            )
    else:
        warnings.append("concurrency not known for both arms; cannot confirm it matches")

    if dense.engine and deepep.engine and dense.engine != deepep.engine:
        warnings.append(
            f"the arms ran on different engines ({dense.engine} vs {deepep.engine}); "
            "the tax then includes engine differences"
        )
    if dense.arm == "deepep":
        warnings.append(f"the run given as the dense arm is named {dense.arm_label!r}")
    if deepep.arm == "dense":
        warnings.append(f"the run given as the DeepEP arm is named {deepep.arm_label!r}")
    if dense.aiperf_version and deepep.aiperf_version and dense.aiperf_version != deepep.aiperf_version:
        warnings.append(
            f"different AIPerf versions ({dense.aiperf_version} vs "
            f"{deepep.aiperf_version}); metric definitions may differ"
        )
    if (
        dense.request_count is not None
        and deepep.request_count is not None
        and dense.request_count != deepep.request_count
    ):
        warnings.append(f"different request counts ({dense.request_count} vs {deepep.request_count})")
    for role, run in (("dense", dense), ("DeepEP", deepep)):
        warnings.extend(f"{role} arm ({run.name}): {w}" for w in run.warnings)
    return warnings


def _ratio(num: Q | None, den: Q | None) -> Q | None:
    if num is None or den is None or den.scalar == 0:
        return None
    return (num / den).as_("ratio")


def derive_pair(dense: AIPerfRun, deepep: AIPerfRun) -> ABPair:
    """The A/B quantities the calibration fits: per-token tax, its spread, and the ratios.

    Everything computed here is `derived` (Q arithmetic on measured inputs); the per-user
    rates and step times are passed through as measured, exactly as exported.
    """
    warnings = check_pair(dense, deepep)
    for run in (dense, deepep):
        if run.itl_ms is None:
            raise InputError(
                "inter_token_latency",
                None,
                f"a streaming run with inter-token latency on both arms; {run.name} has none",
            )
    assert dense.itl_ms is not None and deepep.itl_ms is not None
    tax = deepep.itl_ms - dense.itl_ms

    spread: Q | None = None
    sd_a, n_a = dense.itl_std_ms, dense.itl_count
    sd_b, n_b = deepep.itl_std_ms, deepep.itl_count
    if (
        sd_a is not None
        and sd_b is not None
        and n_a is not None
        and n_b is not None
        and n_a.scalar > 0
        and n_b.scalar > 0
    ):
        # standard error of a difference of two independent means
        variance = sd_a * sd_a / n_a + sd_b * sd_b / n_b
        spread = qmap(math.sqrt, variance, unit="ms")
    else:
        warnings.append("ITL std or count missing on an arm; no spread for the tax")

    tax_pu: Q | None = None
    if dense.per_user_tok_s is not None and deepep.per_user_tok_s is not None:
        tax_pu = (1000.0 / deepep.per_user_tok_s - 1000.0 / dense.per_user_tok_s).as_("ms")

    ttft_basis: str | None = None
    ttft_ratio: Q | None = None
    if dense.ttft_p50_ms is not None and deepep.ttft_p50_ms is not None:
        ttft_ratio, ttft_basis = _ratio(deepep.ttft_p50_ms, dense.ttft_p50_ms), "p50"
    elif dense.ttft_ms is not None and deepep.ttft_ms is not None:
        ttft_ratio, ttft_basis = _ratio(deepep.ttft_ms, dense.ttft_ms), "avg"

    return ABPair(
        dense=dense,
        deepep=deepep,
        tax_ms=tax,
        tax_spread_ms=spread,
        tax_from_per_user_ms=tax_pu,
        step_ms_dense=dense.itl_ms,
        step_ms_deepep=deepep.itl_ms,
        per_user_dense=dense.per_user_tok_s,
        per_user_deepep=deepep.per_user_tok_s,
        per_user_ratio=_ratio(deepep.per_user_tok_s, dense.per_user_tok_s),
        aggregate_ratio=_ratio(deepep.aggregate_tok_s, dense.aggregate_tok_s),
        ttft_ratio=ttft_ratio,
        ttft_basis=ttft_basis,
        warnings=warnings,
    )


def group_by_concurrency(runs: Iterable[AIPerfRun]) -> dict[int, list[AIPerfRun]]:
    """Sort a set of runs into concurrency levels (ascending), keeping input order within one.

    A run with no known concurrency cannot be placed, and dropping it silently would bias a
    fit, so it is an input error.
    """
    groups: dict[int, list[AIPerfRun]] = {}
    for run in runs:
        if run.concurrency is None:
            raise InputError(
                "concurrency",
                None,
                f"a known concurrency for every run; {run.name} states none in its export or its file name",
            )
        groups.setdefault(run.concurrency, []).append(run)
    return dict(sorted(groups.items()))
