"""Sweep tables' format: the columns, their values per chunk, their rounding and their text.

CSV floats carry `precision` significant digits (6 by default, `--precision`): rounded here,
in NumPy, so both writers (`writer.py`) print the same shortest text of the same rounded
double. Parquet keeps every float64 bit. Verdict and arm codes travel as int8 until a writer
names them. The stdlib CSV writer lays floats out as Arrow's does (`_float_text`), so a file
reads the same whichever writer made it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...base.vocabulary import VERDICT_CODES
from ...decide.verdict import ARM_NAMES
from ...physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from ...whatif.sweep.grid import (
    ARM_KEYS,
    ARM_METRICS,
    BOOL_FIELDS,
    BOUND_CODES,
    BOUND_METRICS,
    DISAGG_LABELS,
    DISAGG_METRICS,
    FIELDS,
    FLOAT_FIELDS,
    INT_FIELDS,
    RESULT_METRICS,
    Chunk,
)


def value_columns(bounds: bool = False, disagg: bool = False) -> list[str]:
    """The metric columns that carry a provenance tag, in output order."""
    cols = [f"{arm}_{m}" for arm in ARM_KEYS for m in ARM_METRICS]
    extra = [f"{arm}_{m}" for arm in ARM_KEYS for m in BOUND_METRICS] if bounds else []
    split = [f"disagg_{m}" for m in DISAGG_METRICS] if disagg else []
    return [*cols, *RESULT_METRICS, *extra, *split]


def columns(keep_invalid: bool = False, bounds: bool = False, disagg: bool = False) -> list[tuple[str, str]]:
    """(name, kind) of every output column; kind is str, int, float or bool.

    With `bounds` (`--bounds`), each arm's bound, exchange bound and NIC busy shares follow the
    verdict (their tags with the others). With `keep_invalid` a last `skipped_reason` column
    says why a row was not computed (null for the rows that were).
    """
    out: list[tuple[str, str]] = []
    for name in FIELDS:
        kind = (
            "int"
            if name in INT_FIELDS
            else "float"
            if name in FLOAT_FIELDS
            else "bool"
            if name in BOOL_FIELDS
            else "str"
        )
        out.append((name, kind))
    for arm in ARM_KEYS:
        out += [(f"{arm}_{m}", "float") for m in ARM_METRICS]
        out.append((f"{arm}_feasible", "bool"))
    out += [(m, "float") for m in RESULT_METRICS]
    out += [("verdict", "str"), ("recommended_arm", "str")]
    if bounds:
        for arm in ARM_KEYS:
            out += [(f"{arm}_{c}", "str") for c in BOUND_CODES]
            out += [(f"{arm}_{m}", "float") for m in BOUND_METRICS]
    if disagg:  # a disaggregated deployment's figures (aggregated rows leave them empty)
        out += [(f"disagg_{m}", "float") for m in DISAGG_METRICS]
        out += [("disagg_feasible", "bool"), *((f"disagg_{m}", "str") for m in DISAGG_LABELS)]
    out += [(f"{c}_tag", "str") for c in value_columns(bounds, disagg)]
    if keep_invalid:
        out.append(("skipped_reason", "str"))
    return out


def chunk_values(
    chunk: Chunk, keep_invalid: bool = False, bounds: bool = False, disagg: bool = False
) -> dict[str, Any]:
    """Column -> array over the chunk's rows, or one scalar that holds for all of them.

    Codes (verdict, recommended arm) come as (index array, names) pairs for dictionary encoding.
    A skipped combination's rows carry their scenario fields and None for every metric.
    """
    r = chunk.combination.resolved
    out: dict[str, Any] = {}
    for name in FIELDS:
        if name == "nodes" and r is not None and r.disagg is not None:
            out[name] = int(r.scenario.nodes)  # P + D, whatever the nodes axis holds
        elif name in chunk.numeric:
            arr = chunk.column(name)  # a field held at one value is a scalar in the pass
            out[name] = arr.astype(bool) if name in BOOL_FIELDS else arr.astype(np.int64)
        elif r is None:
            out[name] = chunk.combination.fields.get(name)
        elif name == "gpus_per_node":
            out[name] = r.gpus_per_node
        elif name in ("prefill_cuda_graphs", "decode_cuda_graphs") and r.disagg is not None:
            out[name] = r.disagg.side(name.split("_", 1)[0]).cuda_graphs
        elif name == "weight_dtype":
            out[name] = r.model.weight_dtype
        else:
            out[name] = getattr(r.scenario, name)
    for name, _ in columns(keep_invalid, bounds, disagg):
        if name in out:
            continue
        if name == "skipped_reason":
            out[name] = chunk.skipped
        elif r is None or (name.startswith("disagg_") and name not in chunk.metrics):
            out[name] = None
        elif name == "verdict":
            out[name] = (chunk.column(name), VERDICT_CODES)
        elif name == "recommended_arm":
            out[name] = (chunk.column(name), ARM_NAMES)
        elif name.endswith("_exchange_bound"):
            out[name] = (chunk.column(name), EXCHANGE_BOUNDS)
        elif name.endswith("_bound"):
            out[name] = (chunk.column(name), BOUNDS)
        elif name.endswith("_tag"):
            out[name] = chunk.metrics[name]
        elif isinstance(chunk.metrics.get(name), tuple):  # (indices, names): a code column
            idx, names = chunk.metrics[name]
            out[name] = (np.broadcast_to(idx, chunk.block.shape).reshape(-1), names)
        else:
            out[name] = chunk.column(name)
    return out


# 10**k for every k a float64 can hold, so rounding looks powers up instead of computing them.
_POW10_OFFSET = 330
with np.errstate(over="ignore"):
    _POW10 = 10.0 ** np.arange(-_POW10_OFFSET, 310, dtype=float)
# floor(n * log10(2)) as (n * 78913) >> 18, exact for every binary exponent a double has
# (|n| <= 1100; checked in the tests): integer arithmetic, a thirtieth of the float floor's time.
_LOG10_2_NUM, _LOG10_2_SHIFT = 78913, 18


FAST_DIGITS = 14  # up to here the integer significand and its power of ten are exact doubles
MAX_EXACT_POWER = 22  # 10**22 is the largest power of ten a double holds exactly


def _printf_rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """The slow, exact path: what printf's `%.{digits-1}e` reads back as."""
    return np.array([float(f"{v:.{digits - 1}e}") for v in values.tolist()], dtype=float)


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """Each float rounded to `digits` significant digits (a new array; nan, inf and 0 kept).

    The result is the double nearest the rounded decimal (an integer times or over an exact
    power of ten), so a shortest-repr printer (Arrow's, Python's) prints at most `digits`
    digits. The decimal exponent comes from frexp and one comparison, not log10: this runs on
    every float column of a million-row CSV. Values whose power of ten is not an exact double
    (beyond 1e22 either way) and more than `FAST_DIGITS` digits take printf's exact path.
    """
    x = np.asarray(values, dtype=float)
    if digits >= 17:
        return x
    if digits > FAST_DIGITS:
        out = x.copy()
        finite = np.isfinite(x) & (x != 0)
        out[finite] = _printf_rounded(x[finite], digits)
        return out
    a = np.abs(x)
    _, b = np.frexp(a)  # a = f * 2**b with f in [0.5, 1)
    e = ((b - 1) * _LOG10_2_NUM) >> _LOG10_2_SHIFT  # decimal exponent, at most one too low
    np.clip(e, -_POW10_OFFSET + 1, 308, out=e)
    e += a >= _POW10[e + (1 + _POW10_OFFSET)]
    k = (digits - 1) - e  # decimals to keep
    k_low, k_high = int(k.min(initial=0)), int(k.max(initial=0))
    with np.errstate(invalid="ignore", over="ignore"):
        scale = _POW10[np.clip(k, -308, 308) + _POW10_OFFSET]
        out = np.round(x * scale)
        out /= scale
        if k_low < 0:  # large values: divide by an exact power of ten instead
            big = k < 0
            step = _POW10[np.clip(-k[big], -308, 308) + _POW10_OFFSET]
            out[big] = np.round(x[big] / step) * step
    if k_low < -MAX_EXACT_POWER or k_high > MAX_EXACT_POWER:  # a power of ten no double holds
        inexact = (np.abs(k) > MAX_EXACT_POWER) & (a > 0) & (a < np.inf)
        if inexact.any():
            out[inexact] = _printf_rounded(x[inexact], digits)
    # zeros of either sign come through the arithmetic as they went in; a non-finite result
    # (NaN, an infinity) takes its input back, so a NaN keeps its bits
    bad = ~np.isfinite(out)
    if bad.any():
        out[bad] = x[bad]
    return out


def _rounded(value: Any, kind: str, digits: int | None) -> Any:
    """A float column (or scalar) at `digits` significant digits; anything else as it is."""
    if digits is None or kind != "float" or value is None or isinstance(value, tuple):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return round_significant(value, digits)
    item = value.item() if isinstance(value, np.ndarray) else value
    return float(round_significant(np.asarray([item], dtype=float), digits)[0])


# Arrow prints a float in plain decimals when its decimal exponent E is in [-6, 9] and as
# d.ddde+E otherwise (double-conversion's shortest mode with Arrow's limits); Python's repr
# switches at other limits (-4 and 16), so the digits come from repr and the layout is Arrow's.
_PLAIN_EXPONENTS = range(-6, 10)


def _float_text(value: float) -> str:
    """A float as Arrow's CSV writer prints it: the shortest digits that read back as the same
    double (Python's repr has the same digits), laid out as Arrow lays them out: 2 not 2.0,
    0.00001 not 1e-05, 1e+10 not 10000000000.0, 1.2e-7 not 1.2e-07."""
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    if not digits.rstrip("0"):
        return sign + "0"
    exponent = int(exp or 0) + len(whole) - 1 - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")
    if exponent in _PLAIN_EXPONENTS:
        if exponent >= len(digits) - 1:
            return sign + digits + "0" * (exponent - len(digits) + 1)
        if exponent >= 0:
            return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    point = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{point}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _is_column(value: Any) -> bool:
    """A value that varies over the chunk's rows (one per row), not one that holds for all."""
    return isinstance(value, np.ndarray) and value.ndim == 1


def _text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        return _float_text(float(value))
    return str(value)


def _text_list(arr: np.ndarray, kind: str) -> list[Any]:
    if kind == "bool":
        return np.where(arr, "true", "false").tolist()
    if kind == "float":
        return [_float_text(v) for v in arr.tolist()]
    return arr.tolist()
