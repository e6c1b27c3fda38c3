"""The planner's search space and its vectorised evaluation.

A *family* is one categorical choice the physics cannot take as an array: instance, engine
and weight dtype. Inside a family every (arm, transport) is a *block* of rows over the
numeric axes (nodes x graph mode x EP_NUM_COMMS); blocks that share a resolved scenario (one
transport, one dense alternative) form a *pass*, evaluated by one `compute(resolved.vary(...))`
call. So a default plan is ~150 passes of a few hundred rows each: no Python loop per row.

Which rows exist, and why:

- DeepEP across nodes: every transport valid on the instance except `nvlink`; EP_NUM_COMMS
  is searched only where it changes the transport (`Transport.comms_sensitive`).
- DeepEP on one node rides NVLink whatever transport is named, so it is one block with
  `transport = nvlink`.
- allgather and tensor parallel on every node count; single-node replicas from two nodes up
  (on one node a replica *is* the allgather deployment, and the model gives the same figures).

`PlanRows` holds every row's figures as flat NumPy columns, with each column's provenance tag
(one per pass). Figures are the vectorised model's; the planner re-evaluates the few points
it prints with the scalar `compute`, which also substitutes measured cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...base.quantity import Tag
from ...base.vocabulary import ARMS as SINGLE_LAYOUT_ARMS
from ...catalog.hardware import Instance
from ...catalog.models import ModelSpec
from ...catalog.transports import Transport, load_transports
from ...estimate.arms import running_capacity
from ...estimate.compute import compute
from ...estimate.result import ArmResult, Result
from ...question.fields import DEFAULTS
from ...question.scenario import Resolved, Scenario, resolve

ARMS = (*SINGLE_LAYOUT_ARMS, "disagg")  # disagg: an xPyD split (plan/disagg.py)
COMMS = (1, 2, 4, 8)  # the measured range of the NCCL-GIN proxy's bandwidth curve
METRICS = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu", "step_ms")


@dataclass(frozen=True)
class Family:
    """One instance x engine x weight dtype, with the price the plan costs it at."""

    index: int
    instance: Instance
    engine: str
    weight_dtype: str | None  # None: the checkpoint's own dtype
    price: float | None  # $ per node-hour; None: no price known
    price_given: bool  # the user typed it (it goes into the configuration)
    price_kind: str | None = None  # on-demand, capacity-block, quote, or "given" (typed); None: no price


@dataclass
class Block:
    """Rows of one arm over one transport in one family: indices into its pass's grid."""

    family: Family
    arm: str
    transport: str
    alternative: str
    index: np.ndarray  # rows of the pass grid
    nodes: np.ndarray
    graphs: np.ndarray
    comms: np.ndarray
    start: int = 0  # offset of the first row in the PlanRows

    @property
    def rows(self) -> int:
        return int(self.index.size)


@dataclass
class Pass:
    """Blocks evaluated by one vectorised call (same family, transport and alternative).

    `reuse`: the pass (same family, same grid) whose allgather and replica arms this one
    takes as they are, so only its DeepEP arm is computed (`compute(reuse=...)`).
    """

    resolved: Resolved
    nodes: np.ndarray
    graphs: np.ndarray
    comms: np.ndarray
    blocks: list[Block]
    reuse: int | None = None


@dataclass
class PlanRows:
    """Every row of the search: figures, bands, flags and tags as flat columns."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    low: dict[str, np.ndarray] = field(default_factory=dict)
    high: dict[str, np.ndarray] = field(default_factory=dict)
    tags: dict[str, np.ndarray] = field(default_factory=dict)  # int8 Tag per row
    feasible: np.ndarray | None = None
    fits: np.ndarray | None = None
    usable_gb: np.ndarray | None = None
    concurrency: np.ndarray | None = None


def family_grid(max_nodes: int, nodes_from: int, comms: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Node counts x graph mode (eager, graphs) x EP_NUM_COMMS, flattened."""
    n, g, k = np.meshgrid(
        np.arange(nodes_from, max_nodes + 1, dtype=float),
        np.array([False, True]),
        np.asarray(comms, dtype=float),
        indexing="ij",
    )
    return n.reshape(-1), g.reshape(-1), k.reshape(-1)


def dtypes_for(model: Any) -> list[str | None]:
    """The checkpoint's dtype, and FP8 where the checkpoint is BF16 / FP16 throughout."""
    out: list[str | None] = [None]
    if model.weight_dtype in ("bf16", "fp16") and model.expert_dtype in (None, "bf16", "fp16"):
        out.append("fp8")
    return out


def network_transports(instance: str) -> list[Transport]:
    return [t for t in load_transports().values() if instance in t.instances and t.fabric != "nvlink"]


def base_scenario(model: str, isl: int, osl: int, fam: Family, **fields: Any) -> Scenario:
    return Scenario(
        model=model,
        instance=fam.instance.name,
        engine=fam.engine,
        weight_dtype=fam.weight_dtype,
        isl=isl,
        osl=osl,
        concurrency=1,
        price_per_hour=fam.price if fam.price_given else None,
        nodes=1,
        comms=DEFAULTS["comms"],
        **fields,
    )


# size: the plan's workload (model, ISL, OSL, fixed fields, models), a family, its node range, first index
def family_passes(
    model: str,
    isl: int,
    osl: int,
    fam: Family,
    nodes_from: int,
    max_nodes: int,
    first: int,
    fixed: Mapping[str, Any] | None = None,
    models: Mapping[str, ModelSpec] | None = None,
) -> list[Pass]:
    """The passes of one family; `first` is the index the family's first pass will have.

    `fixed`: scenario fields the whole plan holds (the batch limit per rank, when given).
    `models`: the in-memory specs `model` may name (`PlanRequest.specs()`: the planner reads no file).
    """
    transports = network_transports(fam.instance.name)
    if not transports:
        return []
    home = transports[0].name
    ks = COMMS if DEFAULTS["comms"] in COMMS else (*COMMS, DEFAULTS["comms"])
    n, g, k = family_grid(max_nodes, nodes_from, ks)
    default_k = k == DEFAULTS["comms"]
    multi = n >= 2

    def block(arm: str, transport: str, alternative: str, mask: np.ndarray) -> Block:
        idx = np.flatnonzero(mask)
        return Block(fam, arm, transport, alternative, idx, n[idx], g[idx], k[idx])

    def scenario(transport: str, alternative: str) -> Resolved:
        fields = {"transport": transport, "alternative": alternative, **(fixed or {})}
        return resolve(base_scenario(model, isl, osl, fam, **fields), models)

    home_t = transports[0]
    dense = [block("allgather", home, "allgather", default_k)]
    if multi.any():
        dense.append(block("replica", home, "allgather", default_k & multi))
        dense.append(block("deepep", home, "allgather", multi & (default_k | home_t.comms_sensitive)))
    passes = [Pass(scenario(home, "allgather"), n, g, k, dense)]
    sub = np.flatnonzero(default_k)
    tp = Block(fam, "tp", home, "tp", np.arange(sub.size), n[sub], g[sub], k[sub])
    passes.append(Pass(scenario(home, "tp"), n[sub], g[sub], k[sub], [tp]))
    if multi.any():
        for t in transports[1:]:
            b = block("deepep", t.name, "allgather", multi & (default_k | t.comms_sensitive))
            passes.append(Pass(scenario(t.name, "allgather"), n, g, k, [b], reuse=first))
    if (~multi).any():
        b = block("deepep", "nvlink", "allgather", ~multi & default_k)
        passes.append(Pass(scenario("nvlink", "allgather"), n, g, k, [b], reuse=first))
    return passes


def _take(value: Any, total: int, take: np.ndarray) -> np.ndarray:
    """Entries `take` of a figure computed over `total` rows (a scalar holds for all)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return np.full(take.size, float(arr))
    return np.broadcast_to(arr, (total,))[take]


class Search:
    """The passes of a plan and the one `PlanRows` their rows fill."""

    def __init__(self, passes: list[Pass]) -> None:
        self.passes = passes
        self.blocks = [b for p in passes for b in p.blocks]
        start = 0
        for b in self.blocks:
            b.start = start
            start += b.rows
        self.size = start
        self.rows = PlanRows()
        self.families: list[Family] = []  # set by the scan (the disaggregated rows' configs)
        self.disagg: Any = None  # plan/disagg.PlanDisagg: rows after `size`, or None
        self._starts = np.fromiter((b.start for b in self.blocks), dtype=np.int64, count=len(self.blocks))

    def _empty_rows(self) -> None:
        t, n = self.rows, self.size
        for m in METRICS:
            t.values[m] = np.full(n, np.nan)
            t.low[m] = np.full(n, np.nan)
            t.high[m] = np.full(n, np.nan)
            t.tags[m] = np.zeros(n, dtype=np.int8)
        t.feasible = np.zeros(n, dtype=bool)
        t.fits = np.zeros(n, dtype=bool)
        t.usable_gb = np.full(n, np.nan)
        t.concurrency = np.zeros(n)

    def _write(self, b: Block, arm: ArmResult, total: int, take: np.ndarray, rows: np.ndarray) -> None:
        """Put one block's figures (computed over `total` rows; its own at `take`) in the rows."""
        t = self.rows
        at = b.start + rows
        for m in METRICS:
            q = getattr(arm, m)
            t.values[m][at] = _take(q.value, total, take)
            t.tags[m][at] = int(q.tag)
            if q.banded:
                t.low[m][at] = _take(q.low, total, take)
                t.high[m][at] = _take(q.high, total, take)
        t.feasible[at] = _take(arm.feasible, total, take) > 0
        t.fits[at] = _take(arm.fits_memory, total, take) > 0
        t.usable_gb[at] = _take(arm.memory.usable_gb.value, total, take)

    def evaluate(self, concurrency: float, tick: Callable[[], None] | None = None) -> None:
        """Every row at one concurrency: one call per pass, DeepEP-only where a pass reuses."""
        if not self.rows.values:
            self._empty_rows()
        self.rows.concurrency[:] = concurrency  # type: ignore[index]
        results: dict[int, Result] = {}
        for i, p in enumerate(self.passes):
            cols = {
                "nodes": p.nodes,
                "cuda_graphs": p.graphs,
                "comms": p.comms,
                "concurrency": np.full(p.nodes.size, float(concurrency)),
            }
            reuse = results.get(p.reuse) if p.reuse is not None else None
            result = compute(p.resolved.vary(**cols), reuse=reuse)
            results[i] = result
            for b in p.blocks:
                self._write(b, result.arms[b.arm], p.nodes.size, b.index, np.arange(b.rows))
            if tick is not None:
                tick()

    def evaluate_rows(
        self,
        concurrency: np.ndarray,
        only: np.ndarray | None = None,
        write: bool = False,
        tick: Callable[[], None] | None = None,
    ) -> dict[str, np.ndarray]:
        """Rows at their own concurrencies, `concurrency[:, j]` being the j-th candidate of a row.

        Returns TTFT and step (rows x candidates); with `write` (one candidate) the rows are
        filled too. `only`: the rows to evaluate (others are left as they are).
        """
        conc = np.asarray(concurrency, dtype=float)
        if conc.ndim == 1:
            conc = conc[:, None]
        k = conc.shape[1]
        out = {m: np.full(conc.shape, np.nan) for m in ("ttft_ms", "step_ms")}
        if write:
            if not self.rows.values:
                self._empty_rows()
            assert k == 1
        for p in self.passes:
            picks = []
            for b in p.blocks:
                local = np.arange(b.rows)
                if only is not None:
                    local = local[only[b.start : b.start + b.rows]]
                picks.append(local)
            if not any(pk.size for pk in picks):
                continue
            cols: dict[str, list[np.ndarray]] = {
                "nodes": [],
                "cuda_graphs": [],
                "comms": [],
                "concurrency": [],
            }
            for b, pk in zip(p.blocks, picks, strict=True):
                cols["nodes"].append(np.repeat(b.nodes[pk], k))
                cols["cuda_graphs"].append(np.repeat(b.graphs[pk], k))
                cols["comms"].append(np.repeat(b.comms[pk], k))
                cols["concurrency"].append(conc[b.start + pk].reshape(-1))
            flat = {name: np.concatenate(v) for name, v in cols.items()}
            result = compute(p.resolved.vary(**flat))
            total = flat["nodes"].size
            offset = 0
            for b, pk in zip(p.blocks, picks, strict=True):
                take = np.arange(offset, offset + pk.size * k)
                offset += pk.size * k
                if not pk.size:
                    continue
                arm = result.arms[b.arm]
                for m in out:
                    out[m][b.start + pk] = _take(getattr(arm, m).value, total, take).reshape(pk.size, k)
                if write:
                    self._write(b, arm, total, take, pk)
                    self.rows.concurrency[b.start + pk] = conc[b.start + pk, 0]  # type: ignore[index]
            if tick is not None:
                tick()
        return out

    def capacity(self) -> tuple[np.ndarray, np.ndarray]:
        """Most sequences each row can run at once, and whether one sequence fits at all
        (`estimate.arms.running_capacity`): no `compute` needed."""
        cap = np.zeros(self.size)
        fits = np.zeros(self.size, dtype=bool)
        for p in self.passes:
            for b in p.blocks:
                s = slice(b.start, b.start + b.rows)
                fields = {"nodes": b.nodes, "comms": b.comms, "cuda_graphs": b.graphs}
                cap[s], fits[s] = running_capacity(p.resolved, b.arm, b.rows, **fields)
        return cap, fits

    def tag(self, metric: str, i: int) -> Tag:
        return Tag(int(self.rows.tags[metric][i]))

    def block_of(self, i: int) -> Block:
        return self.blocks[int(np.searchsorted(self._starts, i, side="right")) - 1]

    def row_arrays(self) -> dict[str, np.ndarray]:
        """Per-row categorical indices and numeric fields (for selection and reporting)."""
        arm = np.concatenate([np.full(b.rows, ARMS.index(b.arm), dtype=np.int8) for b in self.blocks])
        fam = np.concatenate([np.full(b.rows, b.family.index, dtype=np.int32) for b in self.blocks])
        price = np.concatenate(
            [np.full(b.rows, np.nan if b.family.price is None else b.family.price) for b in self.blocks]
        )
        return {
            "arm": arm,
            "family": fam,
            "price": price,
            "nodes": np.concatenate([b.nodes for b in self.blocks]),
            "graphs": np.concatenate([b.graphs for b in self.blocks]),
            "comms": np.concatenate([b.comms for b in self.blocks]),
        }


# size: the plan's workload (model, ISL, OSL, fixed fields, in-memory models), families, node range
def make_passes(
    model: str,
    isl: int,
    osl: int,
    families: Sequence[Family],
    nodes_from: int,
    max_nodes: int,
    fixed: Mapping[str, Any] | None = None,
    models: Mapping[str, ModelSpec] | None = None,
) -> list[Pass]:
    """Resolve one scenario per (family, transport, alternative): the only per-combination work."""
    passes: list[Pass] = []
    for fam in families:
        passes += family_passes(model, isl, osl, fam, nodes_from, max_nodes, len(passes), fixed, models)
    return passes
