"""The measured serving cells: the calibration data, and the generator of docs/MEASURED-DATA.md."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.quantity import Q
from ..base.records import Record, row
from ._toml import validate_rows

if TYPE_CHECKING:
    from annotated_types import Ge, Gt

# The built-in cells' shared model, instance and node count, a cell's own unless it names
# others (the default scenario, `question/fields.py: DEFAULTS`, asks about the same).
CELL_MODEL = "qwen3-30b-a3b-fp8"
CELL_INSTANCE = "p5en"
CELL_NODES = 2


@row
class LegMetrics(Record):
    aggregate_tok_s: Annotated[float, Gt(0)] | None = None
    per_user_tok_s: Annotated[float, Gt(0)] | None = None
    itl_ms: Annotated[float, Gt(0)] | None = None
    ttft_p50_ms: Annotated[float, Gt(0)] | None = None
    # derived from the run's export where its first requests waited for a cold start: output
    # tokens over the benchmark's duration less that wait (the cell's `cold_start` says how)
    steady_aggregate_tok_s: Annotated[float, Gt(0)] | None = None


LEGS = ("deepep", "allgather", "versus")
"""A cell's legs: the DeepEP run, the allgather run and a second DeepEP transport's run."""


@row
class Cell(Record):
    """One measured regime. Shared context: Qwen3-30B-A3B-FP8, 2x p5en, EP16, eager."""

    id: str
    role: Literal["calibration", "anchor", "cross-check", "reference-only"]
    title: str
    engine: str
    transport: str
    versus_transport: str | None = None
    comms: Annotated[int, Gt(0)]
    comms_assumed: bool = False
    concurrency: Annotated[int, Gt(0)]
    isl: Annotated[int, Ge(0)]
    osl: Annotated[int, Ge(0)]
    osl_assumed: bool = False
    shape_assumed: bool = False
    cuda_graphs: bool = False  # the catalog's cells are eager; a user's calibration may not be
    max_qps: Annotated[int, Gt(0)] = 2  # EP_EFA_MAX_QPS the cell ran with
    max_batch: Annotated[int, Gt(0)] | None = None  # the run's batch limit per rank, when it set one
    source: str
    cold_start: str = ""  # how a steady-state aggregate was derived from the run's export
    deepep: LegMetrics
    allgather: LegMetrics | None = None
    versus: LegMetrics | None = None

    model: str = CELL_MODEL
    instance: str = CELL_INSTANCE
    nodes: int = CELL_NODES

    def leg(self, name: str) -> LegMetrics | None:
        return getattr(self, name) if name in LEGS else None

    def step_ms(self, leg: str) -> float | None:
        """Decode step of a leg: the exported ITL, else 1000 / per-user tok/s."""
        m = self.leg(leg)
        if m is None:
            return None
        if m.itl_ms is not None:
            return m.itl_ms
        if m.per_user_tok_s is not None:
            return 1000.0 / m.per_user_tok_s
        return None

    def q(self, leg: str, metric: str, unit: str) -> Q | None:
        m = self.leg(leg)
        value = getattr(m, metric) if m is not None else None
        if value is None:
            return None
        return Q.measured(value, unit, f"{self.source} [cell {self.id}]")


@row
class Fact(Record):
    name: str
    value: float
    unit: str
    source: str

    def q(self) -> Q:
        return Q.measured(self.value, self.unit, self.source)


@cache
def load_cells() -> dict[str, Cell]:
    return validate_rows("measured.toml", "cell", Cell)


Shape = tuple[int, int, int, int]  # (concurrency, ISL, OSL, nodes)
_BY_SHAPE: list[tuple[dict[str, Cell], dict[Shape, tuple[Cell, ...]]]] = []


def cells_by_shape() -> dict[Shape, tuple[Cell, ...]]:
    """The catalog's cells by (concurrency, ISL, OSL, nodes): a scenario's candidates in one look,
    in catalog order (every arm of every evaluation asks which cell it is). Built once for the
    cells `load_cells` holds, and again should they ever be reloaded."""
    cells = load_cells()
    if not _BY_SHAPE or _BY_SHAPE[0][0] is not cells:
        out: dict[Shape, list[Cell]] = {}
        for cell in cells.values():
            out.setdefault((cell.concurrency, cell.isl, cell.osl, cell.nodes), []).append(cell)
        _BY_SHAPE[:] = [(cells, {k: tuple(v) for k, v in out.items()})]
    return _BY_SHAPE[0][1]


@cache
def load_facts() -> dict[str, Fact]:
    return validate_rows("measured.toml", "fact", Fact)
