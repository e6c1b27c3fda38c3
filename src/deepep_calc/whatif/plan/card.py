"""The verdict card under a plan: the plan's own choice, on the plan's own terms.

A plan ranks rows by $/Mtok; the card ranks the arms of one cluster by the verdict's rule (like
with like, a 5 % noise band, ties go against DeepEP). Left alone the two can disagree: the card
can recommend an arm the plan left out (`--measured-only`, or no price), or one the plan ranked
a little behind within the noise band. Here both are settled the same way:

- an arm whose row the plan did not compare is *left out* of the card too (infeasible on the
  card, saying why), so the card never recommends what the plan excluded;
- the plan's best is then the arm the card recommends on that cluster, when that arm's row
  meets every target of the plan (the rule's tie-breaks are the plan's too).

So the card printed under a plan names the plan's choice, and its one launch block is the
plan's. Nothing here evaluates a formula: rows are looked up, `decide_resolved()` and `decide()` run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...decide.answer import decide, decide_resolved
from ...estimate.result import Result
from ...question.fields import DEFAULTS
from ...question.scenario import Scenario, resolve
from ..explanation import explain_verdict
from .evidence import notes_for
from .point import Builder
from .scan import Scan
from .space import ARMS

LEFT_OUT = "left out"  # ArmResult.why_code of an arm the plan did not compare


def row_of(scan: Scan, i: int, arm: str, transport: str | None = None) -> int | None:
    """The plan's row for `arm` on the cluster of row `i` (same family, nodes, graph mode).

    DeepEP keeps the configuration's transport and EP_NUM_COMMS (NVLink on one node); the other
    arms have one row each at the default EP_NUM_COMMS. On one node a replica is the allgather
    deployment (the plan has no one-node replica rows): its row is allgather's.
    """
    rows, search = scan.rows, scan.search
    nodes = rows["nodes"][i]
    if arm == "replica" and nodes <= 1:
        arm = "allgather"
    mask = (
        (rows["family"] == rows["family"][i])
        & (rows["nodes"] == nodes)
        & (rows["graphs"] == rows["graphs"][i])
        & (rows["arm"] == ARMS.index(arm))
    )
    if arm == "deepep":
        mask &= rows["comms"] == rows["comms"][i]
    else:
        mask &= rows["comms"] == DEFAULTS["comms"]
    want = transport if arm == "deepep" else None
    if arm == "deepep" and nodes <= 1:
        want = "nvlink"
    for j in np.flatnonzero(mask):
        if want is None or search.block_of(int(j)).transport == want:
            return int(j)
    return None


def _left_out(scan: Scan, build: Builder, j: int | None, measured_only: bool) -> str:
    """Why the plan did not compare row `j` ('' when it did)."""
    if j is None:
        return ""
    reason = str(scan.skip_reason[j])
    if not reason:
        return ""
    if reason.startswith("outside") and measured_only:
        c = build.point(j).config
        arm = ARMS[int(scan.rows["arm"][j])]
        notes = notes_for(c["instance"], c["engine"], c["cuda_graphs"], arm, c["transport"], c["nodes"])
        return f"by --measured-only ({notes[0]})" if notes else "by --measured-only"
    return f"by the plan ({reason})"


def plan_result(scan: Scan, build: Builder, i: int, measured_only: bool) -> Result:
    """The decided answer (`decide_resolved`, no words yet) of row i's configuration, with the
    arms the plan left out marked so and the verdict decided again over what is left."""
    config = build.point(i).config
    result = decide_resolved(resolve(Scenario(**config), build.req.specs()))
    changed = False
    for name, arm in list(result.arms.items()):
        j = row_of(scan, i, name, config["transport"])
        why = _left_out(scan, build, j, measured_only)
        if why and arm.feasible:
            result.arms[name] = replace(arm, feasible=False, why_not=why, why_code=LEFT_OUT)
            changed = True
    if changed:
        result.whatifs.clear()
        result.verdict = decide(result)
    return result


def reconcile(scan: Scan, build: Builder, best: int, ok: np.ndarray, measured_only: bool) -> int:
    """The plan's best row, moved to the arm the card recommends on the same cluster when that
    arm's row meets every target (at most a few moves: each lands on the card's own choice)."""
    seen = {best}
    for _ in range(3):
        result = plan_result(scan, build, best, measured_only)
        rec = result.verdict.recommended_arm
        here = ARMS[int(scan.rows["arm"][best])]
        if rec in (here, "none") or (
            rec == "replica" and here == "allgather" and scan.rows["nodes"][best] <= 1
        ):
            return best
        j = row_of(scan, best, rec, build.point(best).config["transport"])
        if j is None or not bool(ok[j]) or j in seen:
            return best
        seen.add(j)
        best = j
    return best


def card_for(plan: Any) -> Result | None:
    """The card printed under a plan: its best configuration, on the plan's terms."""
    if plan.best is None or plan.scan is None or plan.builder is None:
        return None
    i = next(k for k, p in plan.builder.cache.items() if p is plan.best)
    result = plan_result(plan.scan, plan.builder, i, plan.request.measured_only)
    explain_verdict(result)
    return result
