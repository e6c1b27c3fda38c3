"""AIPerf metric blocks: which tags we read, which units, which ranges, and how CSV names map.

Why a module of its own: every export generation (flat JSON, records JSON, CSV) ends in the same
`{tag: {unit, avg, p50, std, ...}}` blocks, and the checks on them (a block of the wrong shape,
a negative or absurd statistic, a time unit we cannot convert, an ITL whose unit is mislabelled)
must not differ by generation. The CSV's display names are mapped back to these tags here too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import MIN_POSITIVE, Q

MAX_METRIC = 1e12
"""No AIPerf statistic (ms, tok/s, tokens, requests) comes near this; beyond it the file is damaged."""

# Means that a run which streamed any token cannot report as 0, and that the A/B divides by.
_POSITIVE = {
    ("inter_token_latency", "avg"),
    ("output_token_throughput_per_user", "avg"),
    ("output_token_throughput", "avg"),
}

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
TIME_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}


def number(value: Any) -> float | None:
    """A finite JSON number as float; bools, strings, null and NaN are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def json_type(value: Any) -> str:
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


def csv_tag(label: str) -> tuple[str, str]:
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


def csv_cell(text: str) -> float | str | None:
    """A CSV cell as a finite number when it reads as one (thousands commas allowed), else text."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return text  # kept as text: the block check reports it if the metric is one we use
    return value if math.isfinite(value) else text


def metric(metrics: Mapping[str, Any], tag: str, stat: str, source: str) -> Q | None:
    """One statistic of a metric block as a measured `Q`, unchecked; None when it is absent.

    For `AIPerfRun.metric`: statistics no reader check was written for, read as exported.
    """
    block = metrics.get(tag)
    if not isinstance(block, Mapping):
        return None
    value = number(block.get(stat))
    if value is None:
        return None
    unit = str(block.get("unit", ""))
    return Q.measured(value, unit, f"{source}: {tag}.{stat}")


class Blocks:
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
                f"metric '{tag}' is {json_type(raw)}, expected an object with unit and avg",
                field=tag,
            )
        if number(raw.get("avg")) is None:
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
        value = number(raw)
        if value is None:
            raise FileInputError(self.path, f"metric '{tag}' has a non-numeric {stat} ({raw!r})", field=tag)
        self._check_range(tag, stat, value)
        if time:
            exported = str(block.get("unit") or "ms").strip()
            scale = TIME_TO_MS.get(exported)
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
        value = number(raw) if not isinstance(raw, Mapping) else None
        if value is None:
            block = self.block(tag)
            value = number(block.get("avg")) if block is not None else None
        if value is None:
            return None
        self._check_range(tag, "count", value)
        return round(value)


# AIPerf's per-user throughput is the per-request reciprocal of the inter-token latency, so it
# sits within a few per cent of 1000 / mean ITL on real runs (within 2 % on every shared
# export). A factor of 2 apart is no statistics: it is a mislabelled unit (ms written as s),
# and importing it would put a step time off by 1000x into "measured" cells.
ITL_CROSS_CHECK_FACTOR = 2.0


def check_itl_against_per_user(
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
    raw = itl.scalar / TIME_TO_MS.get(unit, 1.0)
    agree = [
        u
        for u, scale in TIME_TO_MS.items()
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
