"""A result's single-change what-ifs, each computed once and kept on the result.

The flip search, the advisories and the bound's "what would move it" all ask for the same few
changed scenarios (EP_NUM_COMMS=8 above all). Each is computed once per result and kept in
`Result.whatifs`; a change to a knob only DeepEP reads recomputes the DeepEP arm alone and
reuses the other arms, which never read it.
"""

from __future__ import annotations

from typing import Any

from ..base.arrays import loaded
from ..decide.explain import WhatIfs
from ..estimate.compute import compute

# Inputs no arm but DeepEP reads: a what-if on them recomputes the DeepEP arm alone.
DEEPEP_ONLY = frozenset({"transport", "comms", "max_qps"})

# Whether a what-if on a DeepEP-only knob reuses the other arms and runs once per result (the fast
# path); the plain path recomputes every arm each time it is asked and exists so
# tests/speed/test_speed_equivalence.py can hold the two equal.
REUSE_OTHER_ARMS = True


def deepep_whatif(result: Any, update: dict[str, Any]) -> Any:
    """The DeepEP arm of this scenario with `update` applied to knobs only DeepEP reads
    (EP_NUM_COMMS, EP_EFA_MAX_QPS): the allgather, TP and replica arms never read them, so
    they and the arm-independent pieces (layout, memory, device times) are taken as they are.
    """

    return _deepep_only(result, update).arms["deepep"]


def _deepep_only(result: Any, update: dict[str, Any]) -> Any:
    """The scenario with `update` applied to knobs only DeepEP reads, computed once per result:
    the flip search and the advisories both ask for EP_NUM_COMMS=8, and the answer is the same."""
    if not REUSE_OTHER_ARMS:
        return compute(result.resolved.change(**update))
    key = tuple(sorted(update.items()))
    changed = result.whatifs.get(key)
    if changed is None:
        changed = result.whatifs[key] = compute(result.resolved.change(**update), reuse=result)
    return changed


def whatif(result: Any, update: dict[str, Any]) -> Any:
    """This scenario with one change, computed once per result: a change only DeepEP reads
    recomputes the DeepEP arm alone (`_deepep_only`); any other is a whole what-if, kept beside
    those for the explanation's other readers (the flip search, the bound's "what would move it")."""
    if update.keys() <= DEEPEP_ONLY:
        return _deepep_only(result, update)
    key = tuple(sorted(update.items()))
    changed = result.whatifs.get(key)
    if changed is None:
        changed = result.whatifs[key] = compute(result.resolved.change(**update))
    return changed


def deepep_arm_whatif(result: Any, update: dict[str, Any]) -> Any:
    """A what-if whose DeepEP arm alone is read (what would move DeepEP's bound): the whole what-if
    when one is kept already; for the graph mode, which moves neither DeepEP's layout nor its
    device times, the DeepEP arm alone on this result's memo (kept apart: its other arms are this
    result's, so no reader of whole what-ifs may take it for one); else the whole what-if."""
    key = tuple(sorted(update.items()))
    kept = result.whatifs.get(key)
    # one by one (no NumPy) the flip search runs the whole what-if after this and reuses it; with
    # NumPy it batches its candidates, and the DeepEP arm alone is what this costs
    if kept is not None or not loaded() or not update.keys() <= DEEPEP_ONLY | {"cuda_graphs"}:
        return kept if kept is not None else whatif(result, update)
    if update.keys() <= DEEPEP_ONLY:
        return _deepep_only(result, update)
    arm_key = ("deepep arm", *key)
    changed = result.whatifs.get(arm_key)
    if changed is None:
        changed = result.whatifs[arm_key] = compute(result.resolved.change(**update), reuse=result)
    return changed


def whatifs_of(result: Any) -> WhatIfs:
    """The what-ifs a verdict's words quote, bound to this result (`decide/explain.py` reads them)."""
    return WhatIfs(
        deepep_arm=lambda update: deepep_whatif(result, update),
        bound_mover=lambda update: deepep_arm_whatif(result, update),
        afresh=lambda update: compute(result.resolved.change(**update)),
    )
