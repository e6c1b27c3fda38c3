"""Which combinations of engine, exchange, route, model family and graph mode the references
cover, so a figure far from any of them carries a wider band.

A modelled figure's band is the spread of the model's out-of-sample misses on figures like
it (`accuracy/validate.py`). Where references of the same combination exist, that is the miss
of a reference left out one at a time; where none does — DeepSeek-V3 on SGLang under CUDA
graphs, say, when every SGLang reference is Qwen3 in eager mode — it is the miss of whole
combinations left out of the fit and predicted, which is larger and is the honest one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..base.arrays import floats, is_array, np, where
from ..base.vocabulary import exchange_of
from ..question.scenario import Resolved

if TYPE_CHECKING:
    from .observations import Obs

UNCOVERED = ":uncovered"  # the suffix of a band kind for combinations no reference covers


def evidence_key(r: Resolved, arm: str, nodes: Any = None, graphs: Any = None) -> str:
    """`engine/exchange/route/family/mode` of one arm of one scenario (scalars only).

    The route is what a DeepEP exchange rides: its transport across nodes, NVLink inside one
    node (a different kernel: no network). The non-DeepEP arms' route is NCCL's collectives whether
    one node or several: their engine terms are the same (issue #25: engine x arm x transport x
    model family), so a single-node replica of a measured engine x model is covered."""
    s = r.scenario
    graphs = s.cuda_graphs if graphs is None else graphs
    if exchange_of(arm) != "deepep":
        route = "nccl"
    elif arm.startswith("replica") or (s.nodes if nodes is None else nodes) <= 1:
        route = "nvlink"
    else:
        route = r.transport.name
    mode = "graphs" if graphs else "eager"
    return f"{r.engine.name}/{exchange_of(arm)}/{route}/{r.model.family}/{mode}"


def obs_key(o: Obs) -> str:
    return evidence_key(o.resolved(), o.arm)


def covered_keys(obs: Iterable[Obs]) -> frozenset[str]:
    """The combinations the fitted observations cover."""
    return frozenset(obs_key(o) for o in obs if o.use == "fit")


def covered(r: Resolved, arm: str, keys: frozenset[str]) -> Any:
    """Whether references cover this arm's combination: a bool, or per row where the node
    count or the graph mode is an array (a plan or a sweep)."""
    s = r.scenario
    nodes, graphs = s.nodes, s.cuda_graphs
    if not (is_array(nodes) or is_array(graphs)):
        return evidence_key(r, arm) in keys
    n, g = np.broadcast_arrays(floats(nodes), np.asarray(graphs, dtype=bool))
    across = n > 1  # the key reads the node count only as one node or several
    out = np.zeros(n.shape, dtype=bool)
    for several in (False, True):
        for gv in (False, True):
            hit = evidence_key(r, arm, 2.0 if several else 1.0, gv) in keys
            out = where((across == several) & (g == gv), hit, out)
    return out
