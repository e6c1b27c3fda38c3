"""Sweeps: every combination of lists and ranges of scenario fields, through one vectorised model.

A sweep is a product of axes, one per scenario field. Categorical fields (model, instance,
engine, transport, ...) and the numeric fields the physics cannot take as arrays
(`gpus_per_node`, the structural overrides, the SLO targets and the price) are resolved once
per combination; the numeric fields of `scenario.VARIABLE` become NumPy arrays over the grid,
evaluated in bounded chunks by `compute(resolved.vary(...))` and `classify_codes`. No Python
loop runs per row.

A chunk is a block of the grid, not a run of flattened rows: one value of each leading axis, a
range of one axis, every value of the trailing ones, which in row order is still a contiguous
run of rows. Each numeric field enters the model as an array shaped to broadcast over that
block (its own axis, ones elsewhere), so every intermediate has the shape of the axes it
depends on: a kernel latency that ignores ISL and OSL is computed once per (nodes, comms,
concurrency), not once per row. Only the figures the output reads are spread to rows, when a
writer asks for them (`Chunk.column`). Same operations on the same numbers: the values are
those of the flattened pass, bit for bit.

Everything is validated before any work: a bad value anywhere raises `InputError` naming the
flag, and nothing is written.

The vectorised path runs the model everywhere: it does not replace a measured cell's numbers
with the measurement, as `evaluate()` does for one scenario. A sweep row therefore equals
`compute(resolve(row))` wherever the row is not a measured cell, and its model figures
(`ArmResult.model_aggregate_tok_s` and the breakdown) where it is.

Why one module: parsing an axis, counting it before it is built, and refusing only values
invalid everywhere all need the same view of the grid.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from ...base.errors import CalcError, InputError
from ...base.vocabulary import FALSE_WORDS, TRUE_WORDS, flag_of
from ...decide.verdict import classify_indices
from ...estimate.arms import check_splittable
from ...estimate.disagg import compute_with_disagg
from ...estimate.result import table_for
from ...physics.disagg import LIMITS as LIMIT_NAMES
from ...question.fields import DEFAULTS
from ...question.scenario import (
    ALTERNATIVES,
    BOOL_FIELDS,
    FLOAT_FIELDS,
    INT_FIELDS,
    VARIABLE,
    Resolved,
    Scenario,
    check_array,
    resolve,
)

CHUNK_ROWS = 50_000  # rows per vectorised pass: as fast as 200k rows at a third of the peak RSS
MAX_ROWS = 50_000_000  # valid rows; beyond this a sweep is a mistake, not a question
MAX_COMBINATIONS = 20_000  # resolved one by one: keep the Python-level loop small
MAX_AXIS_VALUES = 1_000_000

FIELDS = Scenario.field_names()
STRING_FIELDS = tuple(f for f in FIELDS if f not in INT_FIELDS + FLOAT_FIELDS + BOOL_FIELDS)

ARM_KEYS = ("deepep", "alternative", "replica")
ARM_METRICS = ("per_user_tok_s", "step_ms", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")
RESULT_METRICS = ("ratio_deepep_vs_alternative", "tax_ms_per_token")
# With --bounds, per arm: what bounds its step and its exchange (codes into physics.bounds'
# BOUNDS and EXCHANGE_BOUNDS), and how busy its NICs are (per cent, tagged).
BOUND_CODES = ("bound", "exchange_bound")
BOUND_METRICS = ("nic_busy_pct", "nic_busy_exchange_pct")
# a disaggregated combination's deployment (estimate/disagg.py), written only when a sweep has one
DISAGG_METRICS = ("ttft_ms", "tpot_ms", "per_user_tok_s", "aggregate_tok_s", "usd_per_mtok", "kv_transfer_ms")
DISAGG_LABELS = ("prefill_arm", "decode_arm", "bottleneck")  # code columns: (index, names)

# The value words of --cuda-graphs (and --eager, inverted): the same words in every command
# (cli.BOOL_WORDS; tests/cli/test_options_flag_spelling.py checks the two agree).
# `true`/`false` answer the flag they follow; the mode words name the mode whichever flag
# carries them (`--cuda-graphs eager` is eager), so old sweeps keep working.
MODE_WORDS = {"graphs": True, "cuda-graphs": True, "eager": False}
BOOL_WORDS = (*TRUE_WORDS, *FALSE_WORDS, *MODE_WORDS)
BOOL_ALLOWED = "true or false (or the mode: graphs, eager)"


def graphs_word(flag_name: str, word: str) -> bool:
    """Whether `word`, given to `--cuda-graphs` or `--eager`, means CUDA graphs on."""
    low = word.strip().lower()
    if low in MODE_WORDS:
        return MODE_WORDS[low]
    if low in TRUE_WORDS or low in FALSE_WORDS:
        return (low in TRUE_WORDS) == (flag_name != "--eager")  # every mode flag but --eager
    raise InputError(flag_name, word.strip(), BOOL_ALLOWED)


# Parsing -------------------------------------------------------------------------------------

_RANGE = re.compile(r"^\s*([^:]+):([^:]+)(?::\s*([x+]?)\s*([^:]+))?\s*$")


def _number(name: str, text: str, kind: type) -> float:
    allowed = "whole numbers" if kind is int else "numbers"
    try:
        value = float(text)
    except ValueError:
        raise InputError(
            flag_of(name), text.strip(), f"{allowed}, a comma list or a range a:b[:xK|:+K]"
        ) from None
    if kind is int and (not math.isfinite(value) or value != int(value)):
        raise InputError(flag_of(name), text.strip(), "whole numbers")
    return value


def _range(name: str, text: str, kind: type) -> list[float]:
    """`a:b` (step 1), `a:b:+K` or `a:b:K` (arithmetic), `a:b:xK` (geometric), ends included."""
    m = _RANGE.match(text)
    assert m is not None
    lo, hi = _number(name, m.group(1), float), _number(name, m.group(2), float)
    op, step_text = m.group(3) or "+", m.group(4)
    step = _number(name, step_text, float) if step_text is not None else 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise InputError(flag_of(name), text, "a range a:b with a <= b")
    # The count is worked out from the ends and the step before anything is built, so a
    # range of billions of values is refused without allocating them (or looping over them).
    if op == "x":
        if not (math.isfinite(step) and step > 1) or lo <= 0:
            raise InputError(flag_of(name), text, "a geometric range a:b:xK with a > 0 and K > 1")
        steps = math.log(hi / lo) / math.log(step)
    else:
        if not (math.isfinite(step) and step > 0):
            raise InputError(flag_of(name), text, "an arithmetic range a:b:+K with K > 0")
        steps = (hi - lo) / step
    if not math.isfinite(steps) or steps + 1 > MAX_AXIS_VALUES:
        raise InputError(flag_of(name), text, f"at most {MAX_AXIS_VALUES:,} values per field")
    count = math.floor(steps + 1e-9) + 1
    values = lo * np.power(step, np.arange(count)) if op == "x" else lo + step * np.arange(count)
    if kind is int:
        values = np.unique(np.round(values))
    return [float(v) for v in values]


def parse_values(name: str, text: str | None) -> list[Any]:
    """The values one flag stands for: a comma list, ranges, or one value."""
    if name not in FIELDS:
        raise InputError("sweep field", name, f"one of {', '.join(FIELDS)}")
    if text is None:
        return [DEFAULTS.get(name)]
    parts = [p.strip() for p in str(text).split(",")]
    if any(not p for p in parts):
        raise InputError(flag_of(name), text, "a comma list with no empty items")
    out: list[Any] = []
    for part in parts:
        if name in BOOL_FIELDS:
            out.append(graphs_word(flag_of(name), part))
        elif name in INT_FIELDS or name in FLOAT_FIELDS:
            kind = int if name in INT_FIELDS else float
            if ":" in part:
                out.extend(_range(name, part, kind))
            else:
                out.append(_number(name, part, kind))
        elif name == "alternative":
            if part.lower() not in ALTERNATIVES:
                raise InputError(flag_of(name), part, "allgather or tp")
            out.append(part.lower())
        else:
            out.append(part)
    if name in INT_FIELDS:
        out = [int(v) for v in out]
    # keep the first occurrence of each value, in the order given
    return list(dict.fromkeys(out))


# The grid: parsed, checked, resolved -----------------------------------------------------------


@dataclass(frozen=True)
class Combination:
    """One categorical choice: its scalar scenario, resolved, and its place on the axes.

    A combination that is invalid by construction (efa-gda on p5, an expert count no EP group
    splits) has no `resolved` and says why in `skipped`; its rows are counted, not computed.
    """

    index: tuple[int, ...]  # position on each categorical axis
    resolved: Resolved | None
    fields: dict[str, Any] = field(default_factory=dict)  # the categorical values as given
    skipped: str | None = None  # why this combination cannot run (None: it runs)


@dataclass
class SweepGrid:
    """A sweep's grid: every field's values, parsed and checked, and each categorical
    combination resolved once (the numeric axes are evaluated as arrays per combination)."""

    axes: dict[str, list[Any]]  # every scenario field -> its values, in field order
    numeric: tuple[str, ...]  # fields evaluated as arrays (scenario.VARIABLE)
    categorical: tuple[str, ...]  # fields resolved per combination
    combinations: list[Combination] = field(default_factory=list)  # the valid ones
    skipped: list[Combination] = field(default_factory=list)  # invalid by construction
    # how a combination's calibration profile is read, when its rows are first computed (None:
    # its resolver read it already, or there is none)
    read_profile: Callable[[str], Any] | None = None

    @property
    def numeric_shape(self) -> tuple[int, ...]:
        return tuple(len(self.axes[f]) for f in self.numeric)

    @property
    def rows_per_combination(self) -> int:
        return math.prod(self.numeric_shape)

    @property
    def rows(self) -> int:
        """Valid rows: the ones the model computes (and the row limit counts)."""
        return self.rows_per_combination * len(self.combinations)

    @property
    def skipped_rows(self) -> int:
        return self.rows_per_combination * len(self.skipped)

    def skipped_reasons(self) -> dict[str, int]:
        """Reason -> number of combinations skipped for it, in first-seen order."""
        out: dict[str, int] = {}
        for comb in self.skipped:
            out[str(comb.skipped)] = out.get(str(comb.skipped), 0) + 1
        return out

    def calibrated(self, r: Resolved | None) -> Resolved | None:
        """A combination's question with the profile it names read by `read_profile`: only as
        its rows are computed, after every value and both targets are checked, so a bad profile
        is reported where it always was and never makes a combination look invalid."""
        if r is None or self.read_profile is None or r.profile is not None or r.scenario.calibration is None:
            return r
        return replace(r, profile=self.read_profile(r.scenario.calibration))

    def every_combination(self) -> list[Combination]:
        """Valid and skipped combinations in grid order (for --keep-invalid)."""
        return sorted([*self.combinations, *self.skipped], key=lambda c: c.index)

    @property
    def swept(self) -> tuple[str, ...]:
        """The fields given more than one value."""
        return tuple(f for f in FIELDS if len(self.axes[f]) > 1)

    @property
    def disaggregated(self) -> bool:
        """Some combination is a disaggregated deployment (its rows get the disagg_ columns)."""
        return any(c.resolved is not None and c.resolved.disagg is not None for c in self.combinations)


def _graph_modes(raw: Mapping[str, str | None]) -> dict[str, str | None]:
    """Fold `--eager LIST` into `cuda_graphs` (the same words, inverted), refusing a contradiction."""
    raw = dict(raw)
    eager = raw.pop("eager", None)
    if eager is None:
        return raw
    parts = [p.strip() for p in str(eager).split(",")]
    if any(not p for p in parts):
        raise InputError("--eager", eager, "a comma list with no empty items")
    modes = list(dict.fromkeys(graphs_word("--eager", p) for p in parts))
    given = raw.get("cuda_graphs")
    if given is not None and set(parse_values("cuda_graphs", given)) != set(modes):
        raise InputError("--eager", eager, f"the same modes as --cuda-graphs {given}, or only one of the two")
    raw["cuda_graphs"] = ",".join("true" if m else "false" for m in modes)
    return raw


def _disagg_split(raw: Mapping[str, str | None]) -> dict[str, str | None]:
    """`--disagg xPyD` (one split) into prefill / decode node counts; a disaggregated sweep's
    cluster is P + D nodes, so --nodes is refused beside it."""
    from ...question.disagg import parse_disagg

    raw = dict(raw)
    split = raw.pop("disagg", None)
    if split is not None:
        if "," in str(split):
            raise InputError(
                "--disagg", split, "one xPyD split (for a grid: --prefill-nodes LIST --decode-nodes LIST)"
            )
        p, d = parse_disagg(split)
        for name, value in (("prefill_nodes", p), ("decode_nodes", d)):
            if raw.get(name) is not None and str(raw[name]).strip() != str(value):
                raise InputError(flag_of(name), raw[name], f"{value}, as --disagg {split} says (or give one)")
            raw[name] = str(value)
    if (raw.get("prefill_nodes") is not None or raw.get("decode_nodes") is not None) and raw.get(
        "nodes"
    ) is not None:
        raise InputError(
            "--nodes", raw["nodes"], "no --nodes in a disaggregated sweep: each row's cluster is P + D nodes"
        )
    return raw


def _reason(exc: CalcError) -> str:
    """A skip reason: the error line without the value-by-value wording of a refusal."""
    if isinstance(exc, InputError) and exc.value is not None:
        return f"{exc.field} {exc.value}: needs {exc.allowed}"
    return exc.message


# how one combination's scenario is resolved: the catalog only (`resolve`), or with the
# config.json and the profile it names read by the face (`io.inputs.resolve_files`)
Resolver = Callable[[Scenario], Resolved]


def sweep_grid(
    raw: Mapping[str, str | None],
    resolve: Resolver = resolve,
    read_profile: Callable[[str], Any] | None = None,
) -> SweepGrid:
    """Parse every flag, check every value and resolve every combination, before any work.

    A combination invalid by construction is skipped (and counted); a value is refused only
    when no combination that uses it is valid, with the error of its first combination.
    `resolve` turns each combination into a `Resolved` and `read_profile` reads the profile
    it names when its rows are computed (`SweepGrid.calibrated`): the only ways a file enters
    the grid. The defaults read none: a config.json path is an unknown model, and a profile is
    never loaded (the run then stops, `fit.profile.profile_of`). The CLI passes `resolve` with
    `io.hf_config.load_hf_config` as its `read_model`, which reads a config.json where the
    model is checked, and `io.profile.load_profile`, so a bad file among other bad values is
    refused in the same order as ever. (`io.inputs.resolve_files` as `resolve` reads the
    profile at once instead: a bad one makes its combinations invalid.)
    """
    raw = _disagg_split(_graph_modes(raw))
    unknown = [k for k in raw if k not in FIELDS]
    if unknown:
        raise InputError("sweep field", unknown[0], f"one of {', '.join(FIELDS)}")
    axes: dict[str, list[Any]] = {}
    numeric = tuple(f for f in FIELDS if f in VARIABLE)
    categorical = tuple(f for f in FIELDS if f not in VARIABLE)
    per = 1
    for name in FIELDS:  # refuse as soon as the numeric axes parsed so far are over the row limit
        axes[name] = parse_values(name, raw.get(name))
        if name in VARIABLE:
            per *= len(axes[name])
            if per > MAX_ROWS:
                raise InputError("sweep", f"{per:,} rows or more", f"at most {MAX_ROWS:,} rows")
    for name in numeric:
        arr = np.asarray(axes[name], dtype=bool if name in BOOL_FIELDS else float)
        if name not in BOOL_FIELDS:
            check_array(name, arr)
    cat_sizes = [len(axes[f]) for f in categorical]
    n_comb = math.prod(cat_sizes)
    if n_comb > MAX_COMBINATIONS:
        raise InputError(
            "sweep", f"{n_comb:,} combinations", f"at most {MAX_COMBINATIONS:,} categorical combinations"
        )
    grid = SweepGrid(axes, numeric, categorical, read_profile=read_profile)
    first_numeric = {f: axes[f][0] for f in numeric}

    errors: list[tuple[tuple[int, ...], CalcError]] = []
    for index in itertools.product(*(range(n) for n in cat_sizes)):
        fields = {f: axes[f][i] for f, i in zip(categorical, index, strict=True)}
        try:
            resolved = resolve(Scenario(**{**fields, **first_numeric}))  # a wrong type: InputError
            check_splittable(resolved)  # a layout no arm can split, as `evaluate` refuses it
        except CalcError as exc:
            errors.append((index, exc))
            grid.skipped.append(Combination(index, None, fields, _reason(exc)))
            continue
        grid.combinations.append(Combination(index, resolved, fields))
    _refuse_values_invalid_everywhere(grid, errors)
    if grid.rows > MAX_ROWS:
        raise InputError("sweep", f"{grid.rows:,} rows", f"at most {MAX_ROWS:,} rows")
    return grid


def _refuse_values_invalid_everywhere(
    grid: SweepGrid, errors: list[tuple[tuple[int, ...], CalcError]]
) -> None:
    """Raise the first error of a categorical value that no valid combination uses."""
    if not errors:
        return
    if not grid.combinations:
        raise errors[0][1]
    for pos, name in enumerate(grid.categorical):
        used = {c.index[pos] for c in grid.combinations}
        for i in range(len(grid.axes[name])):
            if i not in used:
                raise next(exc for index, exc in errors if index[pos] == i)


# Evaluation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Rows [start, stop) of the numeric grid: `slices` picks each axis's values, `shape` is
    the block's extent on every axis (rows = its product)."""

    start: int
    stop: int
    slices: tuple[slice, ...]
    shape: tuple[int, ...]


def grid_blocks(shape: tuple[int, ...], chunk_rows: int) -> Iterator[Block]:
    """The grid in row order as blocks of at most `chunk_rows` rows (one row at the least).

    With T_j the rows of axes j.. (T_d = 1), the first j with T_j <= chunk_rows splits the grid:
    axis j - 1 is taken `chunk_rows // T_j` values at a time, the axes after it whole and the
    ones before it one value at a time.
    """
    d = len(shape)
    j, per, step = _split(shape, chunk_rows)
    if j == 0:
        yield Block(0, per, (slice(None),) * d, tuple(shape))
        return
    axis = j - 1
    whole = (slice(None),) * (d - j)
    for lead in itertools.product(*(range(n) for n in shape[:axis])):
        flat = 0
        for n, i in zip(shape[:axis], lead, strict=True):
            flat = flat * n + i
        for lo in range(0, shape[axis], step):
            hi = min(lo + step, shape[axis])
            start = (flat * shape[axis] + lo) * per
            slices = (*(slice(i, i + 1) for i in lead), slice(lo, hi), *whole)
            yield Block(start, start + (hi - lo) * per, slices, (1,) * axis + (hi - lo,) + tuple(shape[j:]))


def _split(shape: tuple[int, ...], chunk_rows: int) -> tuple[int, int, int]:
    """(j, T_j, values of axis j - 1 per block) for `grid_blocks`."""
    trailing = [math.prod(shape[j:]) for j in range(len(shape) + 1)]
    chunk_rows = max(chunk_rows, 1)  # a block is one row at the least (trailing[-1] is 1)
    j = next(j for j in range(len(shape) + 1) if trailing[j] <= chunk_rows)
    return j, trailing[j], max(1, chunk_rows // trailing[j])


def blocks_per_combination(shape: tuple[int, ...], chunk_rows: int) -> int:
    """How many blocks `grid_blocks` yields (the progress bar's count), without yielding them."""
    j, _, step = _split(shape, chunk_rows)
    return 1 if j == 0 else math.prod(shape[: j - 1]) * math.ceil(shape[j - 1] / step)


def numeric_columns(grid: SweepGrid, block: Block) -> dict[str, Any]:
    """Each numeric field over a block, shaped to broadcast over it (its values on its own axis,
    ones elsewhere).

    A field the block holds at one value is that value (a 0-d array), not an array repeating
    it: the physics broadcasts it, and each operation on it costs one element.
    """
    d = len(block.shape)
    cols: dict[str, Any] = {}
    for axis, (name, sl) in enumerate(zip(grid.numeric, block.slices, strict=True)):
        values = np.asarray(grid.axes[name], dtype=bool if name in BOOL_FIELDS else float)[sl]
        if values.size == 1:
            cols[name] = values[0]
        else:
            cols[name] = values.reshape((1,) * axis + (values.size,) + (1,) * (d - axis - 1))
    return cols


def evaluate_chunk(
    resolved: Resolved, columns: dict[str, np.ndarray], bounds: bool = False
) -> dict[str, Any]:
    """One vectorised pass: the sweep's metric columns for these rows (arrays or scalars + tags).

    Returns column name -> array (or a scalar that holds for every row), and `<column>_tag`
    -> the provenance tag, which is one value for the whole pass. `verdict` and
    `recommended_arm` are int8 positions in `VERDICT_CODES` and `ARM_NAMES`. With `bounds`,
    each arm's bound and exchange bound (int8 positions in `physics.bounds.BOUNDS` and
    `EXCHANGE_BOUNDS`) and its NIC busy shares, from the same pass.
    """

    # The file holds no bands (low / high), so the pass computes none: the same values, one
    # array operation fewer per figure.
    table = replace(table_for(resolved), bands={})
    if resolved.disagg is not None:  # the cluster is P + D nodes, whatever the nodes axis holds
        columns = {k: v for k, v in columns.items() if k != "nodes"}
    result = compute_with_disagg(resolved.vary(**columns), table=table)
    codes, rec = classify_indices(result)
    out: dict[str, Any] = {}
    for key, arm_name in zip(ARM_KEYS, ("deepep", result.alternative, "replica"), strict=True):
        arm = result.arms[arm_name]
        for metric in ARM_METRICS:
            q = getattr(arm, metric)
            out[f"{key}_{metric}"] = q.value
            out[f"{key}_{metric}_tag"] = str(q.tag)
        out[f"{key}_feasible"] = np.asarray(arm.feasible, dtype=bool)
        if bounds and arm.bounds is not None:
            out.update(_bound_columns(key, arm.bounds))
    for metric in RESULT_METRICS:
        q = getattr(result, metric)
        out[metric] = q.value
        out[f"{metric}_tag"] = str(q.tag)
    # Codes are small integers from the rule on: counts, the map and the writers all work on
    # them, and names are attached only when a file is written.
    out["verdict"] = np.asarray(codes, dtype=np.int8)
    out["recommended_arm"] = np.asarray(rec, dtype=np.int8)
    d = result.disaggregated
    if d is not None:
        for metric in DISAGG_METRICS:
            q = d.transfer_ms if metric == "kv_transfer_ms" else getattr(d, metric)
            out[f"disagg_{metric}"] = q.value
            out[f"disagg_{metric}_tag"] = str(q.tag)
        out["disagg_feasible"] = np.asarray(d.feasible, dtype=bool)
        out["disagg_prefill_arm"] = (np.asarray(d.prefill.index), d.prefill.arms)
        out["disagg_decode_arm"] = (np.asarray(d.decode.index), d.decode.arms)
        out["disagg_bottleneck"] = (np.asarray(d.deployment.limit), LIMIT_NAMES)
    return out


def _bound_columns(key: str, b: Any) -> dict[str, Any]:
    """One arm's bound columns over a pass (`evaluate_chunk` with bounds)."""
    out: dict[str, Any] = {
        f"{key}_bound": np.asarray(b.index, dtype=np.int8),
        f"{key}_exchange_bound": np.asarray(b.exchange_index, dtype=np.int8),
    }
    for metric in BOUND_METRICS:
        q = getattr(b, metric)
        out[f"{key}_{metric}"] = q.value
        out[f"{key}_{metric}_tag"] = str(q.tag)
    return out


@dataclass
class Chunk:
    combination: Combination
    block: Block
    numeric: dict[str, Any]  # each field shaped to broadcast over the block (numeric_columns)
    metrics: dict[str, Any]  # empty for a skipped combination's rows (--keep-invalid)

    @property
    def skipped(self) -> str | None:
        return self.combination.skipped

    @property
    def start(self) -> int:
        return self.block.start

    @property
    def stop(self) -> int:
        return self.block.stop

    @property
    def rows(self) -> int:
        return self.block.stop - self.block.start

    def column(self, name: str) -> np.ndarray:
        """A metric or a numeric scenario column, spread over the block and read in row order
        (one value per row: a copy, unless the figure already has the block's shape)."""
        value = self.metrics[name] if name in self.metrics else self.numeric[name]
        return np.broadcast_to(np.asarray(value), self.block.shape).reshape(-1)

    @cached_property
    def numeric_index(self) -> tuple[np.ndarray, ...]:
        """Each row's position on every numeric axis (the verdict map places rows by them)."""
        shape = self.block.shape
        d = len(shape)
        out = []
        for axis, (sl, n) in enumerate(zip(self.block.slices, shape, strict=True)):
            ix = (sl.start or 0) + np.arange(n).reshape((1,) * axis + (n,) + (1,) * (d - axis - 1))
            out.append(np.broadcast_to(ix, shape).reshape(-1))
        return tuple(out)


def iter_chunks(
    grid: SweepGrid,
    chunk_rows: int = CHUNK_ROWS,
    evaluator: Callable[..., dict[str, Any]] | None = None,
    keep_invalid: bool = False,
) -> Iterator[Chunk]:
    """Evaluate the grid combination by combination, a block of at most `chunk_rows` grid rows
    at a time (`grid_blocks`), in row order.

    With `keep_invalid`, skipped combinations yield chunks too (in grid order), with no metrics.
    """
    run = evaluator or evaluate_chunk
    shape = grid.numeric_shape
    for comb in grid.every_combination() if keep_invalid else grid.combinations:
        resolved = grid.calibrated(comb.resolved)  # its profile read now, as its rows are computed
        for block in grid_blocks(shape, chunk_rows):
            cols = numeric_columns(grid, block)
            metrics = {} if resolved is None else run(resolved, cols)
            yield Chunk(comb, block, cols, metrics)
