"""(b) The concurrency at which DeepEP reaches, then beats, the alternative's aggregate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...base.arrays import np
from ...base.quantity import Q, qmin
from ...catalog.constants import const
from ...decide.verdict import ARM_LABELS
from ...estimate.passes import first_true, model
from ...physics.layout import layout
from ...question.fields import LIMITS
from ...question.scenario import Resolved
from .search import Answer, _at, plural, why_not_served

# (b) concurrency at which DeepEP overtakes the alternative ----------------------------------


def _ratio_pred(r: Resolved, threshold: float) -> Callable[[np.ndarray], np.ndarray]:
    alt_name = r.scenario.alternative

    def pred(conc: np.ndarray) -> np.ndarray:
        res = model(r, concurrency=conc)
        both = np.asarray(res.arms["deepep"].feasible) & np.asarray(res.arms[alt_name].feasible)
        return both & (np.asarray(res.ratio_deepep_vs_alternative.value) >= threshold)

    return pred


def held_concurrency(r: Resolved) -> Q:
    """The card's max concurrency for the two compared arms: the most sequences both hold in KV
    cache at once. The concurrency search stops here so that its "never" names the card's limit
    (past it the engine only queues what it cannot hold)."""
    res = model(r)
    arms = [res.arms[n].memory.max_concurrency for n in ("deepep", r.scenario.alternative)]
    return _at(qmin(*arms)).as_("requests", "smaller of the two arms' max concurrency (KV cache)")


@dataclass(frozen=True)
class _Words:
    """What a tie and a win are asked and answered in: the ratio to reach and its words."""

    key: str
    question: str
    goal: str
    short: str
    threshold: float
    alt: str


def _words(r: Resolved, win: bool) -> _Words:
    """The tie's or the win's threshold, question and phrases (a win must clear the noise band)."""
    noise = const("noise_band")
    threshold = 1.0 + noise.scalar if win else 1.0
    alt = ARM_LABELS[r.scenario.alternative]
    question = (
        f"Concurrency at which DeepEP beats {alt} by more than the {noise.scalar:.0%} noise band"
        if win
        else f"Concurrency at which DeepEP's aggregate reaches {alt}'s"
    )
    return _Words(
        key="concurrency_win" if win else "concurrency_tie",
        question=question,
        goal=f"beats {alt} by more than {noise.scalar:.0%}" if win else f"reaches {alt}'s aggregate",
        short=f"short of the {threshold:.2f}× a win needs" if win else f"short of a tie ({threshold:.2f}×)",
        threshold=threshold,
        alt=alt,
    )


def concurrency_cross(r: Resolved, win: bool) -> Answer:
    """The smallest whole concurrency at which DeepEP ties (`win`: beats) the alternative, up to
    the most sequences both arms hold and both answer in time; else why never."""
    w = _words(r, win)
    held = held_concurrency(r)
    top = int(min(LIMITS["concurrency"], max(held.scalar, 1.0)))
    served = _last_served(r, top)
    if served is not None:
        top = min(top, served)
    found = first_true(_ratio_pred(r, w.threshold), 1, top)
    if found is None:
        return _never(r, w, top, served, held)
    return _crossing(r, w, found, held)


def _never(r: Resolved, w: _Words, top: int, served: int | None, held: Q) -> Answer:
    """No crossing up to `top`: what stops it (the prompt ceiling, an arm that cannot run, or
    the KV cache), with the ratio at the limit."""
    probe = model(r, concurrency=np.array([top]))
    ratio = _at(probe.ratio_deepep_vs_alternative)
    dee, other = probe.arms["deepep"], probe.arms[r.scenario.alternative]
    check = {"ratio_at_limit": ratio, "max_concurrency": held}
    alt, short = w.alt, w.short
    if served is not None and served == top:
        note = (
            f"Never while both arms answer within the prompt ceiling, which they do up to concurrency "
            f"{served:,}: there DeepEP reaches {ratio.scalar:.3f}× {alt}'s aggregate, {short}."
        )
    elif not bool(np.all(dee.feasible)):
        note = f"Never: DeepEP is not feasible here ({why_not_served(r, dee)})."
    elif not bool(np.all(other.feasible)):
        note = f"Never: {alt} is not feasible here ({why_not_served(r, other)})."
    else:
        note = (
            f"Never up to concurrency {top:,}, the most sequences both arms hold in KV cache at once "
            f"(the card's max concurrency): there DeepEP reaches {ratio.scalar:.3f}× {alt}'s aggregate, "
            f"{short}."
        )
    return Answer(w.key, w.question, None, note, check, short="never")


def _crossing(r: Resolved, w: _Words, found: int, held: Q) -> Answer:
    """The crossing at `found`: the ratio there and one below, and the tokens per rank it means."""
    at = model(r, concurrency=np.array([found, max(found - 1, 1)]))
    ratio_at, ratio_below = _at(at.ratio_deepep_vs_alternative, 0), _at(at.ratio_deepep_vs_alternative, 1)
    tokens = float(np.asarray(layout(r.vary(concurrency=[found]), "deepep").seqs_per_rank).reshape(-1)[0])
    value = Q(float(found), "requests", ratio_at.tag, f"search on the model ratio >= {w.threshold:g}")
    if found == 1:
        note = f"Already at concurrency 1 DeepEP {w.goal}: the ratio is {ratio_at.scalar:.3f}×."
    else:
        note = (
            f"From concurrency {found:,} ({plural(tokens, 'token')} per rank) DeepEP {w.goal}: the ratio is "
            f"{ratio_at.scalar:.3f}× there and {ratio_below.scalar:.3f}× at {found - 1:,} (the smallest "
            "whole concurrency where it holds)."
        )
    tokens_q = Q(tokens, "tokens/rank", ratio_at.tag, "concurrency / EP ranks (engine batch cap applies)")
    return Answer(
        w.key,
        w.question,
        value,
        note,
        {
            "ratio_at": ratio_at,
            "ratio_below": ratio_below,
            "tokens_per_rank": tokens_q,
            "max_concurrency": held,
        },
    )


def _last_served(r: Resolved, top: int) -> int | None:
    """Largest concurrency up to `top` at which DeepEP and the alternative are both feasible, when
    what stops them beyond it is the queue (they fit and split at every concurrency); else None."""
    alt = r.scenario.alternative

    def broken(conc: np.ndarray) -> np.ndarray:
        res = model(r, concurrency=conc)
        both = np.asarray(res.arms["deepep"].feasible) & np.asarray(res.arms[alt].feasible)
        return ~np.broadcast_to(both, conc.shape)

    first_bad = first_true(broken, 1, max(top, 1))
    if first_bad is None or first_bad <= 1:
        return None
    res = model(r, concurrency=np.array([first_bad]))
    stuck = [res.arms[n] for n in ("deepep", alt)]
    if not all(bool(np.all(a.fits_memory)) and bool(np.all(a.splits)) for a in stuck):
        return None
    return first_bad - 1
