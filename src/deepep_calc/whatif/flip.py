"""The flip search: the first single input change that changes the verdict's code.

Its answer is the last advisory and the robustness line (`explanation.py`). Each candidate is
the changed scenario computed as the answer would be (measured cells where they exist), so the
code and ratio it quotes are those the suggested command prints.
"""

from __future__ import annotations

from typing import Any

from ..base.arrays import loaded, np
from ..base.errors import CalcError
from ..base.quantity import Q
from ..catalog.transports import load_transports
from ..decide.explain import flip_text
from ..decide.verdict import classify, classify_codes
from ..estimate.cells import measured_cell_for
from ..estimate.compute import compute
from ..question.fields import LIMITS
from ..question.scenario import VARIABLE
from .fixes import PROPOSED_TRANSPORTS
from .memo import DEEPEP_ONLY, whatif


def _numeric_candidates(s: Any, one_node_transport: bool) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if s.comms != 8 and s.nodes > 1:  # the proxy's lanes: nothing on one node reads them
        out.append(("--comms 8", {"comms": 8}))
    out.append(("--eager" if s.cuda_graphs else "--cuda-graphs", {"cuda_graphs": not s.cuda_graphs}))
    for factor in (4, 16):
        out.append((f"--concurrency {s.concurrency * factor}", {"concurrency": s.concurrency * factor}))
    if s.concurrency >= 4:
        out.append((f"--concurrency {s.concurrency // 4}", {"concurrency": s.concurrency // 4}))
    if not one_node_transport:  # NVLink cannot span two nodes: that is no what-if
        out.append((f"--nodes {s.nodes * 2}", {"nodes": s.nodes * 2}))
    if s.nodes > 1:
        out.append((f"--nodes {s.nodes // 2}", {"nodes": s.nodes // 2}))
    return [(label, upd) for label, upd in out if _within_limits(upd)]


def _within_limits(update: dict[str, Any]) -> bool:

    return all(not isinstance(v, int) or isinstance(v, bool) or v <= LIMITS[k] for k, v in update.items())


def flip_changes(result: Any) -> list[tuple[str, dict[str, Any]]]:
    """The single changes the flip search tries, in order: its flag text and the update.

    On one node DeepEP rides NVLink whatever transport is named, so a transport is no what-if
    there (as a second node is none for NVLink)."""
    r = result.resolved
    s = r.scenario
    changes = [
        (f"--transport {name}", {"transport": name})
        for name in PROPOSED_TRANSPORTS
        if name != s.transport and r.instance.name in load_transports()[name].instances and s.nodes > 1
    ]
    return changes + _numeric_candidates(s, r.transport.fabric == "nvlink")


def flip_advisory(result: Any, code: str) -> str:
    """The first single input change (of a short, ordered list) that changes the verdict.

    Each candidate is the changed scenario evaluated as `evaluate` would (measured cells where
    they exist), so the code and ratio quoted are the ones the suggested command prints. They
    run in order, stopping at the first that flips, on Python floats: a DeepEP-only knob
    recomputes the DeepEP arm alone, and a flip is often the first candidate that moves every
    arm (CUDA graphs). When that one does not flip and NumPy is already loaded (a server, a
    sweep), the rest go through one vectorised pass (`_first_flip_batched`): the same
    physics on a row per candidate, the same first flip. One scenario in a fresh process keeps
    to floats and never imports NumPy (`base/arrays.py`).
    """

    changes = flip_changes(result)
    full_runs = 0  # candidates that moved every arm, run one by one
    batch = BATCH_WHATIFS and loaded()
    for k, (label, update) in enumerate(changes):
        deepep_only = update.keys() <= DEEPEP_ONLY
        if batch and not deepep_only and full_runs and len(changes) - k > 1:
            batched = _first_flip_batched(result, code, changes[k:])
            if batched is not None:
                return batched
            batch = False  # these candidates cannot share a pass: one by one from here
        try:
            # a knob only DeepEP reads leaves the other arms (and their measured cells) as they are
            other = whatif(result, update)
        except CalcError:
            continue
        full_runs += not deepep_only
        new_code, _ = classify(other)
        if new_code != code:
            return flip_text(label, new_code, other.ratio_deepep_vs_alternative)
    return ""


# Whether the flip search may batch its remaining candidates into one vectorised pass (the fast
# path); tests/speed/test_speed_equivalence.py holds it to the one-by-one search.
BATCH_WHATIFS = True


def _first_flip_batched(result: Any, code: str, changes: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The flip search's remaining candidates, one row each, in one vectorised pass.

    Only numeric what-ifs with no measured cell can share a pass (a pass runs the model alone,
    as a sweep does); otherwise None, and the search goes on one by one. A candidate that is
    not a valid scenario is left out, as the one-by-one search skips it.
    """
    s = result.scenario
    rows: list[tuple[str, dict[str, Any]]] = []
    for label, update in changes:
        if update.keys() <= DEEPEP_ONLY or not update.keys() <= set(VARIABLE):
            return None
        try:
            changed = result.resolved.change(**update)
        except CalcError:
            continue
        if any(measured_cell_for(changed, arm) is not None for arm in ("deepep", "allgather")):
            return None
        rows.append((label, update))
    if not rows:
        return ""
    fields = sorted({name for _, update in rows for name in update})
    columns = {name: [update.get(name, getattr(s, name)) for _, update in rows] for name in fields}
    try:
        batch = compute(result.resolved.vary(**{name: np.asarray(v) for name, v in columns.items()}))
    except CalcError:
        return None
    n = len(rows)
    codes = np.broadcast_to(np.asarray(classify_codes(batch)[0]), (n,))  # a row per candidate
    ratio = batch.ratio_deepep_vs_alternative
    ratios = np.broadcast_to(np.asarray(ratio.value, dtype=float), (n,))
    for i, (label, _) in enumerate(rows):
        if str(codes[i]) != code:
            return flip_text(label, str(codes[i]), Q(float(ratios[i]), ratio.unit, ratio.tag, ratio.source))
    return ""
