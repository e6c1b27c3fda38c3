"""Measured cells: which one a scenario is, and how its figures replace the model's.

Where a scalar scenario is a measured cell (`catalog/data/measured.toml`, or a calibration
profile's own), the measured numbers stand in for the model's for that arm, tagged measured:
the cell's scenario (the default scenario is one) is reproduced exactly, not approximately. A
varied scenario (`Resolved.measured` False) never takes a cell.
"""

from __future__ import annotations

from ..base.quantity import Q
from ..catalog.measured import Cell, cells_by_shape, load_cells
from ..catalog.model_catalog import find_model, load_models, preset_twin
from ..fit.profile import profile_of
from ..question.scenario import Resolved, Scenario

ROLE_PRIORITY = {"calibration": 0, "anchor": 1, "cross-check": 2}


# Measured cells ---------------------------------------------------------------------------


def _is_cell_scenario(r: Resolved, cell: Cell) -> bool:
    """Whether the scenario is the one the cell ran, EP_NUM_COMMS and EP_EFA_MAX_QPS aside (only
    the DeepEP arm reads them; `measured_cell_for` checks them for that arm)."""
    s = r.scenario
    assert isinstance(s, Scenario)
    return (  # cheapest, most selective comparisons first: this runs for every cell and arm
        s.concurrency == cell.concurrency
        and s.isl == cell.isl
        and s.osl == cell.osl
        and s.nodes == cell.nodes
        and r.engine.name == cell.engine
        and r.instance.name == cell.instance
        and cell.model in _cell_models(r)
        and r.gpus_per_node == r.instance.gpus_per_node
        and s.cuda_graphs == cell.cuda_graphs
        and all(getattr(s, k) is None for k in ("experts", "topk", "hidden", "moe_layers", "kv_dtype"))
        and _native_dtype(s.weight_dtype, cell.model)
        and _same_batching(r, cell)
    )


def _cell_models(r: Resolved) -> tuple[str, ...]:
    """The model names whose measured cells describe this model: what `--model` says (a preset,
    or the config path a user's profile was calibrated with), and for a config.json the preset it
    is architecturally identical to (same shape, attention and dtypes), so a user's own copy of a
    calibrated checkpoint keeps its measurements. A dtype override on a config is another
    deployment: no twin."""

    s = r.scenario
    name = s.model.strip().lower()
    if name in load_models() or s.weight_dtype is not None:
        return (name,)
    twin = preset_twin(r.model)
    return (name,) if twin is None else (name, twin)


def _same_batching(r: Resolved, cell: Cell) -> bool:
    """The run's batch limit and the scenario's behave alike: equal, or neither binds here."""
    if cell.max_batch is None or cell.max_batch == r.max_batch:
        return True
    per_rank = -(-cell.concurrency // (cell.nodes * r.gpus_per_node))
    return per_rank <= min(cell.max_batch, r.max_batch)


def _native_dtype(weight_dtype: str | None, model: str) -> bool:
    """Whether a --weight-dtype override still describes the checkpoint the cell ran.

    `r.model` already carries the override, so compare with the unmodified model; an override
    also moves the routed experts to that dtype, so a model with its own expert dtype
    (MXFP4 gpt-oss) is never its native deployment under one.
    """
    if weight_dtype is None:
        return True

    native = find_model(model)  # a catalog cell names a preset
    return (
        native is not None
        and native.expert_dtype is None
        and weight_dtype.strip().lower() == native.weight_dtype
    )


def _catalog_candidates(r: Resolved) -> tuple[Cell, ...]:
    """The catalog's cells of this scenario's load and size (the first test `_is_cell_scenario`
    makes), looked up rather than scanned."""
    s = r.scenario
    try:
        return cells_by_shape().get((s.concurrency, s.isl, s.osl, s.nodes), ())
    except TypeError:  # an array-valued field (a grid): no single shape, every cell is a candidate
        return tuple(load_cells().values())


def measured_cell_for(r: Resolved, arm: str) -> Cell | None:
    """The measured cell for this arm of this scenario, best-evidenced first.

    The allgather arm never reads EP_NUM_COMMS or EP_EFA_MAX_QPS, so a run that differs from
    the scenario only in those still measures it (a cell that matches them too comes first).
    """
    if arm == "deepep":
        want = r.transport.name
    elif arm == "allgather":
        want = None
    else:
        return None
    best: Cell | None = None
    best_key: tuple[bool, int, bool] | None = None
    profile = profile_of(r)
    user_cells = list(profile.cells()) if profile is not None else []
    for cell in [*user_cells, *_catalog_candidates(r)]:
        if cell.role not in ROLE_PRIORITY or cell.leg(arm) is None:
            continue
        if want is not None and (cell.transport != want or cell.comms_assumed):
            continue
        if not _is_cell_scenario(r, cell):
            continue
        exact = r.scenario.comms == cell.comms and r.scenario.max_qps == cell.max_qps
        if want is not None and not exact:
            continue
        key = (not exact, ROLE_PRIORITY[cell.role], cell.shape_assumed)
        if best_key is None or key < best_key:
            best, best_key = cell, key
    return best


def deepep_neighbour_cell(r: Resolved) -> Cell | None:
    """A DeepEP measurement of this scenario at other EP_NUM_COMMS / EP_EFA_MAX_QPS settings.

    A what-if on those knobs is modelled, while the run it starts from is measured (and carries
    the benchmark's ramp): the reasons quote the model at that run so the two read alike.
    """
    if measured_cell_for(r, "deepep") is not None:
        return None
    best: Cell | None = None
    profile = profile_of(r)
    user_cells = list(profile.cells()) if profile is not None else []
    for cell in [*user_cells, *_catalog_candidates(r)]:
        if cell.role not in ROLE_PRIORITY or cell.deepep is None or cell.comms_assumed:
            continue
        if cell.transport != r.transport.name or not _is_cell_scenario(r, cell):
            continue
        if best is None or ROLE_PRIORITY[cell.role] < ROLE_PRIORITY[best.role]:
            best = cell
    return best


# size: the four figures a measured cell may replace go in and come out together, in one order
def apply_cell(cell: Cell, arm: str, step: Q, per_user: Q, aggregate: Q, ttft: Q) -> tuple[Q, Q, Q, Q]:
    pu = cell.q(arm, "per_user_tok_s", "tok/s")
    itl = cell.q(arm, "itl_ms", "ms")
    if itl is not None:
        step = itl
        per_user = pu if pu is not None else (1000.0 / itl).as_("tok/s")
    elif pu is not None:
        per_user = pu
        step = (1000.0 / pu).as_("ms")
    aggregate = cell.q(arm, "aggregate_tok_s", "tok/s") or aggregate
    ttft = cell.q(arm, "ttft_p50_ms", "ms") or ttft
    return step, per_user, aggregate, ttft
