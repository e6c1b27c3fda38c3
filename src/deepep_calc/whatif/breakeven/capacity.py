"""(c) Where capacity forces expert parallelism: input length, concurrency and node count."""

from __future__ import annotations

from typing import Any

from ...base.arrays import np
from ...base.quantity import Q, weakest
from ...decide.verdict import classify_codes
from ...estimate.passes import first_true, model
from ...estimate.result import Result
from ...question.fields import LIMITS
from ...question.scenario import Resolved
from .search import Answer, _at, plural

# (c) capacity -------------------------------------------------------------------------------


def _codes(r: Resolved, **arrays: Any) -> tuple[np.ndarray, Result]:
    """Per row: "capacity" where one node cannot hold weights + KV (sharding is forced), else
    the verdict's code. Memory alone decides capacity here: a row where every arm only queues
    past the prompt ceiling is "nothing fits" in the verdict, not a reason to shard experts."""
    res = model(r, **arrays)
    codes, _ = classify_codes(res)
    forced = ~np.asarray(res.arms["replica"].fits_memory, bool)
    codes = np.where(forced, "capacity", np.where(codes == "capacity", "dense", codes))
    return np.asarray(codes).reshape(-1), res


def _memory_check(res: Result, arm: str, i: int) -> dict[str, Q]:
    mem = res.arms[arm].memory
    return {"memory_gb_per_gpu": _at(mem.total_gb, i), "usable_gb": _at(mem.usable_gb, i)}


def capacity_field(r: Resolved, name: str) -> Answer:
    """Smallest ISL or concurrency at which capacity forces EP (memory grows with both)."""
    label = {"isl": "input length", "concurrency": "concurrency"}[name]
    question = f"Smallest {label} at which one node can no longer hold it (capacity forces EP)"
    key = f"capacity_{'isl' if name == 'isl' else 'conc'}"
    limit = LIMITS[name]
    if name == "isl" and r.model.max_context:  # no input beyond the model's context window
        limit = min(limit, max(r.model.max_context - int(r.scenario.osl), 1))

    def pred(values: np.ndarray) -> np.ndarray:
        return _codes(r, **{name: values})[0] == "capacity"

    found = first_true(pred, 1, limit)
    unit = "tokens" if name == "isl" else "requests"
    if found is None:
        _, res = _codes(r, **{name: np.array([limit])})
        check = {f"{k}_at_limit": v for k, v in _memory_check(res, "replica", 0).items()}
        if name == "isl":
            why = "the model's context window less the output length" if r.model.max_context else "the limit"
            note = f"Never: one node holds any input length up to {limit:,} tokens ({why})."
        else:
            note = (
                f"Never: one node holds any concurrency up to {limit:,} requests, because the engine caps "
                "its running batch; past the card's max concurrency the rest wait in the queue."
            )
        return Answer(key, question, None, note, check, short="never")
    _, res = _codes(r, **{name: np.array([found, max(found - 1, 1)])})
    check = {
        **{f"{k}_at": v for k, v in _memory_check(res, "replica", 0).items()},
        **{f"{k}_below": v for k, v in _memory_check(res, "replica", 1).items()},
    }
    tag = weakest(*check.values())
    value = Q(float(found), unit, tag, f"search on single-node memory vs HBM ({label})")
    if found == 1:
        return Answer(
            key,
            question,
            value,
            f"Forced already at {label} 1: the weights alone need more than one node, so shard experts "
            "across nodes (EP).",
            check,
        )
    return Answer(
        key,
        question,
        value,
        f"One node holds it up to {label} {found - 1:,}; from {plural(found, unit[:-1])} on, experts must "
        "be sharded across nodes (EP).",
        check,
    )


def capacity_nodes(r: Resolved) -> Answer:
    question = "Node count below which capacity forces EP (single-node replicas cannot hold the load)"
    limit = LIMITS["nodes"]

    def pred(nodes: np.ndarray) -> np.ndarray:
        return _codes(r, nodes=nodes)[0] != "capacity"

    found = first_true(pred, 1, limit)
    if found is None:
        _, res = _codes(r, nodes=np.array([1]))
        check = _memory_check(res, "replica", 0)
        return Answer(
            "capacity_nodes",
            question,
            None,
            f"Forced at every node count up to {limit:,}: a single-node replica needs "
            f"{check['memory_gb_per_gpu'].scalar:,.0f} GB per GPU against "
            f"{check['usable_gb'].scalar:,.0f} GB usable, so shard experts across nodes (EP).",
            check,
            short="always",
        )
    _, res = _codes(r, nodes=np.array([found, max(found - 1, 1)]))
    check = {
        **{f"{k}_at": v for k, v in _memory_check(res, "replica", 0).items()},
        **{f"{k}_below": v for k, v in _memory_check(res, "replica", 1).items()},
    }
    value = Q(float(found), "nodes", weakest(*check.values()), "search on single-node replica memory")
    note = (
        "Never forced: one node holds this load, so single-node replicas work at any node count."
        if found == 1
        else f"Below {plural(found, 'node')} each replica carries too many sequences; "
        f"from {plural(found, 'node')} on, single-node replicas fit."
    )
    return Answer("capacity_nodes", question, value, note, check)


def ep_nodes(r: Resolved) -> Answer:
    question = "Fewest nodes on which the DeepEP arm fits in HBM"
    limit = LIMITS["nodes"]

    def pred(nodes: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(model(r, nodes=nodes).arms["deepep"].fits_memory), nodes.shape)

    found = first_true(pred, 1, limit)
    if found is None:
        return Answer(
            "ep_nodes",
            question,
            None,
            f"Does not fit on any node count up to {limit:,}: pick a smaller model or more HBM per GPU.",
            short="never",
        )
    res = model(r, nodes=np.array([found]))
    check = _memory_check(res, "deepep", 0)
    value = Q(float(found), "nodes", weakest(*check.values()), "search on DeepEP arm memory per GPU")
    world = found * r.gpus_per_node
    note = (
        f"DeepEP fits from {plural(found, 'node')}: {check['memory_gb_per_gpu'].scalar:,.1f} GB per GPU "
        f"of {check['usable_gb'].scalar:,.1f} GB usable."
    )
    if r.model.experts % world:
        note += (
            f" {r.model.experts} experts do not split evenly over EP{world}: "
            "pick a node count that divides them."
        )
    return Answer("ep_nodes", question, value, note, check)
