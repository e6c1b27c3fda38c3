"""A verdict's words and advice, with the what-ifs they quote run here.

`explain_verdict` fills in what `decide()` leaves out: the headline, the reasons and caveats
(`decide/explain.py`), the fixes when nothing fits or no arm meets the targets (`fixes.py`), the
run flags, and the advisories and robustness line, which quote changed scenarios (`memo.py`)
and the flip search (`flip.py`). `decide/` words what it is handed; the what-ifs run here.
"""

from __future__ import annotations

from typing import Any

from ..decide import disagg
from ..decide.disagg_launch import launch_blocks
from ..decide.explain import WhatIfs, advisories, caveats, engine_flags, mechanism, reasons
from ..decide.headline import headline
from ..decide.verdict import Verdict
from .fixes import fixes_for
from .flip import flip_advisory
from .memo import whatifs_of


def explain_verdict(result: Any) -> Verdict:
    """Work out the words and the advice of `result.verdict`, once, and return it.

    The words: headline, reasons, caveats, fixes, the run flags and the blurb. The advice (it
    reads the fixes): advisories, the robustness line and the disaggregation line, the what-if
    passes of the model that take most of an answer's time.
    """
    v: Verdict = result.verdict
    if v.explained:
        return v
    arm, status = v.recommended_arm, v.status
    found = fixes_for(result, status) if status != "ok" else []
    v.caveats = caveats(result, arm)
    v.fixes = [f.to_json() for f in found]
    v.headline = headline(result, v, v.contending, found, v.caveats)
    whatifs = whatifs_of(result)
    v.reasons = reasons(result, v, whatifs)
    v.flags = _with_disaggregated(engine_flags(result, arm), result)
    v.blurb = mechanism(result, v)
    v.advisories, v.robustness, v.disaggregation = _advise(result, v, found, whatifs)
    v.explained = True
    return v


def _with_disaggregated(flags: dict[str, Any], result: Any) -> dict[str, Any]:
    """The run block, plus both servers' and the router's for a disaggregated scenario."""
    block = launch_blocks(result)
    if block is not None:
        flags["disaggregated"] = block
    return flags


def _advise(result: Any, v: Verdict, fixes: list[Any], whatifs: WhatIfs) -> tuple[list[str], str, Any]:
    """The advisories, the robustness line and the disaggregation line of a verdict (the
    what-if passes)."""
    out = advisories(result, v, fixes, whatifs)
    out += disagg.advisories(result)
    line = disagg.comparison(result, v)
    flip = flip_advisory(result, v.code) if v.status != "nothing_fits" else ""
    if flip:
        out.append(flip)
        change = flip.split(" would flip", 1)[0]
        return out, f"fragile: {change} alone flips it (the last advisory).", line
    if v.status == "nothing_fits":
        return out, "untested: nothing fits as asked", line
    robust = "robust: no single change of transport, comms, graphs, concurrency or nodes flips it"
    if v.close_call:  # robust to what-ifs, yet within the model's error: say both, not just one
        robust += ", though the call itself is within the model's error band (headline)"
    return out, robust, line
