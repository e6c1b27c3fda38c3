"""Read a DeepEP kernel benchmark log into per-rank dispatch / combine timings.

Why: the transport catalog's dispatch and combine latencies are kernel-level references from
other people's clusters. A user who runs DeepEP's own tests (`tests/test_low_latency.py`,
`tests/test_internode.py`) on their nodes has a better reference for their fabric, and this
reader turns that console output into measured `Q`s whose source names the log file.

The log is free text from many processes, so the reader is tolerant: it recognises the lines
DeepEP prints (rank-prefixed bandwidth / avg_t lines, send/recv split lines, `[tuning] Best ...`
lines from the normal-mode tests, and configuration lines such as `num_tokens=128, hidden=7168`)
and ignores everything else. A file in which nothing is recognisable is an error, because a
silent empty result would look like a kernel that costs nothing.

Why one module: one log format (DeepEP's own test output in its several versions) read
line by line; the patterns and the per-rank reduction change together.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Q
from deepep_calc.io.textfile import MAX_FILE_BYTES, read_text_file

SAMPLE_LOG = Path(__file__).resolve().parent / "samples" / "deepep_ll_efa_proxy_p5en_ep16.log"
"""A synthesised low-latency log at the published efa-proxy EP16 gate-run figures (p5en)."""

_TO_US = {"us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1000.0, "s": 1e6, "ns": 1e-3}
_UNIT = r"(us|µs|μs|ms|ns|s)\b"
_NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"

_RANK_RE = re.compile(r"\[\s*rank\s*(\d+)\s*\]|^\s*rank\s*(\d+)\s*[:|]", re.I)
_BW_RE = re.compile(rf"\b(dispatch\s*\+\s*combine|dispatch|combine)\s+bandwidth\s*:\s*{_NUM}\s*GB/s", re.I)
_STAT_RE = re.compile(rf"\b(avg|min|max)_t\s*=\s*{_NUM}\s*{_UNIT}", re.I)
_SENDRECV_RE = re.compile(
    rf"\b(dispatch|combine)\s+send/recv\s+time\s*:\s*{_NUM}\s*\+\s*{_NUM}\s*{_UNIT}", re.I
)
_TUNING_RE = re.compile(
    r"best\s+(dispatch|combine)\s*(?:\(\s*([\w-]+)\s*\))?\s*:\s*SMs\s*(\d+)"
    r"(?:\s*,\s*NVL\s+chunk\s*(\d+))?(?:\s*,\s*RDMA\s+chunk\s*(\d+))?\s*:\s*(.*)$",
    re.I,
)
_TUNING_TIME_RE = re.compile(rf"{_NUM}\s*{_UNIT}")
_TUNING_BW_RE = re.compile(rf"{_NUM}\s*GB/s\s*\(\s*(RDMA|NVL)\s*\)", re.I)
_BUFFER_RE = re.compile(rf"allocating\s+buffer\s+size\s*:\s*{_NUM}\s*MB", re.I)
_KV_RE = re.compile(
    r"(?<![\w-])(?:--)?(num[_-]tokens|hidden(?:[_-]size)?|num[_-]topk|top[_-]?k|"
    r"num[_-]experts|num[_-]ranks|num[_-]processes)\s*(?:=|:|\s)\s*(\d+)\b",
    re.I,
)
# What a log says about its own transport: an explicit `transport=<name>` (or `--transport`),
# and environment settings that select one (`NCCL_GIN_TYPE=2`, also written "NCCL-GIN type 2"
# in a header). Comment lines count: a header is where a run states its setup.
_TRANSPORT_RE = re.compile(r"(?<![\w-])(?:--)?transport\s*(?:=|:|\s)\s*([a-z][a-z0-9-]+)\b", re.I)
_ENV_RE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\s*[=:]\s*([A-Za-z0-9_.-]+)")
_GIN_RE = re.compile(r"\bNCCL[-_ ]GIN[-_ ]TYPE\s*(?:=|:|\s)\s*(\d+)\b", re.I)
_KV_FIELD = {
    "num_tokens": "tokens",
    "hidden": "hidden",
    "hidden_size": "hidden",
    "num_topk": "topk",
    "topk": "topk",
    "top_k": "topk",
    "num_experts": "experts",
    "num_ranks": "ranks",
    "num_processes": "ranks",
}


@dataclass(frozen=True)
class KernelSample:
    """One timing line: one rank's average (and min / max) for one kernel."""

    rank: int | None
    kind: str  # "dispatch", "combine" or "total" (dispatch + combine measured together)
    avg_us: float | None
    min_us: float | None
    max_us: float | None
    gbps: float | None
    line: int


@dataclass(frozen=True)
class SendRecv:
    """The send / receive split DeepEP prints when it times the two halves with hooks."""

    rank: int | None
    kind: str
    send_us: float
    recv_us: float
    line: int


@dataclass(frozen=True)
class TuningResult:
    """A normal-mode `[tuning] Best ...` line: the chosen launch config and what it achieved."""

    kind: str
    dtype: str | None
    sms: int
    nvl_chunk: int | None
    rdma_chunk: int | None
    time_us: Q | None
    rdma_gbps: float | None
    nvl_gbps: float | None
    line: int


@dataclass(frozen=True)
class KernelShape:
    """The configuration the log states; fields are None where it says nothing."""

    tokens: int | None = None
    hidden: int | None = None
    topk: int | None = None
    experts: int | None = None
    ranks: int | None = None


@dataclass(frozen=True)
class KernelLog:
    """A parsed DeepEP benchmark log.

    Per-rank lists are ordered by rank (lines without a rank keep file order at the end). The
    summary `Q`s are medians across ranks, tagged measured: like AIPerf's p50 they are a
    statistic of observations, not a model, and their source names the log file.
    """

    path: Path
    ranks: list[int]
    dispatch_us: list[float]
    combine_us: list[float]
    total_us: list[float]
    dispatch_gbps: list[float]
    combine_gbps: list[float]
    total_gbps: list[float]
    shape: KernelShape
    buffer_mb: float | None
    dispatch_p50_us: Q | None
    combine_p50_us: Q | None
    total_p50_us: Q | None
    samples: list[KernelSample] = field(default_factory=list, repr=False)
    send_recv: list[SendRecv] = field(default_factory=list, repr=False)
    tuning: list[TuningResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stated_transport: tuple[str, int] | None = None  # (name, line) the log names itself
    stated_env: dict[str, tuple[str, int]] = field(default_factory=dict)  # KEY -> (value, line)


# Largest figure a DeepEP log line can mean (us, GB/s, MB, ranks, tokens); beyond it the line is
# damaged, and a 400-digit number would otherwise become inf or an int() that refuses to parse.
MAX_LOG_NUMBER = 1e12


class _BadNumber(ValueError):
    """A number on a recognised line that cannot be a measurement; reported with its line."""


def _real(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value > MAX_LOG_NUMBER:
        raise _BadNumber(text)
    return value


def _whole(text: str) -> int:
    if len(text) > 12:  # int() of thousands of digits is refused by Python itself
        raise _BadNumber(text)
    return int(_real(text))


def _us(value: str, unit: str) -> float:
    return _real(value) * _TO_US.get(unit, _TO_US.get(unit.lower(), 1.0))


def _rank(line: str) -> int | None:
    m = _RANK_RE.search(line)
    if m is None:
        return None
    return _whole(m.group(1) or m.group(2))


def _segment_samples(segment: str, rank: int | None, lineno: int) -> KernelSample | None:
    m = _BW_RE.search(segment)
    if m is None:
        return None
    name = re.sub(r"\s+", "", m.group(1).lower())
    kind = "total" if "+" in name else name
    stats: dict[str, float] = {}
    for s in _STAT_RE.finditer(segment[m.end() :]):
        stats[s.group(1).lower()] = _us(s.group(2), s.group(3))
    return KernelSample(
        rank, kind, stats.get("avg"), stats.get("min"), stats.get("max"), _real(m.group(2)), lineno
    )


def _tuning(line: str, lineno: int, source: str) -> TuningResult | None:
    m = _TUNING_RE.search(line)
    if m is None:
        return None
    rest = m.group(6)
    rdma = nvl = None
    for bw in _TUNING_BW_RE.finditer(rest):
        if bw.group(2).upper() == "RDMA":
            rdma = _real(bw.group(1))
        else:
            nvl = _real(bw.group(1))
    time_us: Q | None = None
    t = _TUNING_TIME_RE.search(_TUNING_BW_RE.sub("", rest))
    if t is not None:
        kind = m.group(1).lower()
        time_us = Q.measured(_us(t.group(1), t.group(2)), "us", f"{source}: best {kind} line {lineno}")
    return TuningResult(
        kind=m.group(1).lower(),
        dtype=m.group(2),
        sms=_whole(m.group(3)),
        nvl_chunk=_whole(m.group(4)) if m.group(4) else None,
        rdma_chunk=_whole(m.group(5)) if m.group(5) else None,
        time_us=time_us,
        rdma_gbps=rdma,
        nvl_gbps=nvl,
        line=lineno,
    )


def _by_rank(samples: list[KernelSample], kind: str) -> list[KernelSample]:
    chosen = [s for s in samples if s.kind == kind]
    return sorted(chosen, key=lambda s: (s.rank is None, s.rank if s.rank is not None else 0, s.line))


def _median_q(values: list[float], what: str, source: str) -> Q | None:
    if not values:
        return None
    return Q.measured(
        float(statistics.median(values)),
        "us",
        f"{source}: median over {len(values)} ranks of {what} avg_t",
    )


@dataclass
class _Scan:
    """What the line-by-line pass over a log has found so far."""

    path: Path
    source: str
    samples: list[KernelSample] = field(default_factory=list)
    send_recv: list[SendRecv] = field(default_factory=list)
    tuning: list[TuningResult] = field(default_factory=list)
    shape: dict[str, int] = field(default_factory=dict)
    buffer_mb: float | None = None
    warnings: list[str] = field(default_factory=list)
    stated_transport: tuple[str, int] | None = None
    stated_env: dict[str, tuple[str, int]] = field(default_factory=dict)


def parse_kernel_log(text: str, path: Path) -> KernelLog:
    """Parse log text (already read); `path` names the file in errors and sources."""
    scan = _Scan(path, f"DeepEP kernel log {path.name}")
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped:
            scan.stated_transport = scan.stated_transport or _stated_transport(stripped, lineno)
            for key, value in _stated_env(stripped):
                scan.stated_env.setdefault(key, (value, lineno))
        if not stripped or stripped.startswith("#"):
            continue
        try:
            _scan_line(scan, line, lineno)
        except _BadNumber as exc:
            shown = str(exc) if len(str(exc)) <= 24 else f"{str(exc)[:12]}...({len(str(exc))} characters)"
            raise FileInputError(
                path, f"line {lineno}: {shown} is not a plausible number (non-finite or over 1e12)"
            ) from None
    if not (scan.samples or scan.send_recv or scan.tuning):
        raise FileInputError(
            path,
            "no DeepEP benchmark lines found (expected e.g. '[rank 0] Dispatch bandwidth: "
            "... avg_t=... us' or '[tuning] Best dispatch ...')",
        )
    return _reduce(scan)


def _scan_line(scan: _Scan, line: str, lineno: int) -> None:
    """Collect one line's bandwidth samples, send/recv splits, tuning result, buffer and shape."""
    rank = _rank(line)
    for segment in line.split("|"):
        sample = _segment_samples(segment, rank, lineno)
        if sample is not None:
            scan.samples.append(sample)
        for sr in _SENDRECV_RE.finditer(segment):
            scan.send_recv.append(
                SendRecv(
                    rank,
                    sr.group(1).lower(),
                    _us(sr.group(2), sr.group(4)),
                    _us(sr.group(3), sr.group(4)),
                    lineno,
                )
            )
    if (tuned := _tuning(line, lineno, scan.source)) is not None:
        scan.tuning.append(tuned)
    if (b := _BUFFER_RE.search(line)) is not None:
        scan.buffer_mb = _real(b.group(1))
    for kv in _KV_RE.finditer(line):
        _shape_field(scan, kv, lineno)


def _shape_field(scan: _Scan, kv: re.Match[str], lineno: int) -> None:
    """One `name=value` of the kernel's shape: the first statement wins, a contradiction warns."""
    key = _KV_FIELD.get(kv.group(1).lower().replace("-", "_"))
    if key is None:
        return
    value = _whole(kv.group(2))
    if value == 0:  # a zero-sized shape would reach the kernel model as a division by 0
        raise FileInputError(scan.path, f"line {lineno}: {kv.group(1)} is 0; expected a positive number")
    if key in scan.shape and scan.shape[key] != value:
        first = scan.shape[key]
        scan.warnings.append(
            f"line {lineno}: {key} = {value} contradicts the earlier {first}; keeping the first"
        )
        return
    scan.shape.setdefault(key, value)


def _reduce(scan: _Scan) -> KernelLog:
    """The per-rank samples grouped by kind and reduced to medians, with the doubts about them."""
    samples, send_recv, warnings, source = scan.samples, scan.send_recv, scan.warnings, scan.source
    dispatch = _by_rank(samples, "dispatch")
    combine = _by_rank(samples, "combine")
    total = _by_rank(samples, "total")
    d_us = [s.avg_us for s in dispatch if s.avg_us is not None]
    c_us = [s.avg_us for s in combine if s.avg_us is not None]
    t_us = [s.avg_us for s in total if s.avg_us is not None]
    kernel_shape = KernelShape(**scan.shape)
    warnings += _sample_doubts(samples, (dispatch, combine, total), d_us, c_us, kernel_shape)
    all_ranks = sorted(
        {s.rank for s in samples if s.rank is not None} | {s.rank for s in send_recv if s.rank is not None}
    )
    return KernelLog(
        path=scan.path,
        ranks=all_ranks,
        dispatch_us=d_us,
        combine_us=c_us,
        total_us=t_us,
        dispatch_gbps=[s.gbps for s in dispatch if s.gbps is not None],
        combine_gbps=[s.gbps for s in combine if s.gbps is not None],
        total_gbps=[s.gbps for s in total if s.gbps is not None],
        shape=kernel_shape,
        buffer_mb=scan.buffer_mb,
        dispatch_p50_us=_median_q(d_us, "dispatch", source),
        combine_p50_us=_median_q(c_us, "combine", source),
        total_p50_us=_median_q(t_us, "dispatch + combine", source),
        samples=samples,
        send_recv=send_recv,
        tuning=scan.tuning,
        warnings=warnings,
        stated_transport=scan.stated_transport,
        stated_env=scan.stated_env,
    )


def _sample_doubts(
    samples: list[KernelSample],
    groups: tuple[list[KernelSample], list[KernelSample], list[KernelSample]],
    d_us: list[float],
    c_us: list[float],
    shape: KernelShape,
) -> list[str]:
    """Why the medians may mislead: repeated ranks, no avg_t, unequal rank counts, no shape."""
    warnings: list[str] = []
    dispatch, combine, _ = groups
    for kind, group in zip(("dispatch", "combine", "total"), groups, strict=True):
        ranks = [s.rank for s in group if s.rank is not None]
        if len(ranks) != len(set(ranks)):
            warnings.append(f"some ranks report {kind} more than once; every line is kept in the median")
    if (dispatch or combine) and not (d_us or c_us):
        warnings.append("bandwidth lines carry no avg_t; no latency can be read from them")
    if d_us and c_us and len(d_us) != len(c_us):
        warnings.append(f"{len(d_us)} ranks report dispatch but {len(c_us)} report combine")
    if samples and shape.tokens is None:
        warnings.append(
            "the log does not state num_tokens / hidden / topk / experts; the shape must be given separately"
        )
    return warnings


def _stated_transport(line: str, lineno: int) -> tuple[str, int] | None:
    from deepep_calc.catalog.transports import load_transports

    for m in _TRANSPORT_RE.finditer(line):
        name = m.group(1).lower()
        if name in load_transports():
            return name, lineno
    return None


def _stated_env(line: str) -> list[tuple[str, str]]:
    out = [(m.group(1), m.group(2)) for m in _ENV_RE.finditer(line)]
    out += [("NCCL_GIN_TYPE", m.group(1)) for m in _GIN_RE.finditer(line)]
    return out


def check_transport(log: KernelLog, transport: Any) -> None:
    """Refuse a log that states it ran another transport than the one it would calibrate.

    A kernel log is a measurement of the transport it ran on; filed under another name it would
    turn that transport's figures "measured" with someone else's numbers. The log contradicts
    `transport` when it names another transport, or sets an environment variable `transport`
    sets to another value, or sets one that only another transport uses.
    """
    from deepep_calc.catalog.transports import load_transports

    if log.stated_transport is not None and log.stated_transport[0] != transport.name:
        name, line = log.stated_transport
        raise FileInputError(
            log.path,
            f"line {line} says the run used transport {name}, but it is given to calibrate "
            f"{transport.name}: pass --transport {name}, or a log of a {transport.name} run",
            field="transport",
        )
    for key, (value, line) in log.stated_env.items():
        users = [t.name for t in load_transports().values() if t.env.get(key) == value]
        mine = transport.env.get(key)
        if transport.name in users or (mine is None and len(users) != 1):
            continue
        theirs = f"the setting of {', '.join(users)}" if users else "no catalog transport's setting"
        wants = (
            f"{transport.name} runs with {key}={mine}"
            if mine is not None
            else f"{transport.name} does not set it"
        )
        raise FileInputError(
            log.path,
            f"line {line} sets {key}={value}, {theirs}; {wants}: the log measured another "
            f"transport than --transport {transport.name}",
            field="transport",
        )


def load_kernel_log(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> KernelLog:
    """Read and parse a DeepEP benchmark log, with the same file guards as the AIPerf reader."""
    p = Path(path)
    return parse_kernel_log(read_text_file(p, max_bytes), p)
