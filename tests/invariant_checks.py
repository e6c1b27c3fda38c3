"""Checks shared by the invariant and the fuzz tests: what "a sound result" means.

A result is sound when every number in it is finite, or its arm says it is not feasible and
why (cost alone may also be unknown, on an instance with no public price), when its JSON is
valid without NaN, and when no NumPy floating-point error happened while computing it.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.estimate.result import Result


@contextmanager
def fp_strict() -> Iterator[None]:
    """NumPy division by zero, overflow and invalid operations raise; any RuntimeWarning fails.

    Underflow is left alone: a probability like (1 - 1/E)^tokens rounding to 0 is the right answer.
    """
    with (
        np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", RuntimeWarning)
        yield


def evaluate_or_refuse(scenario: Scenario) -> Result | None:
    """The result, or None when the tool refused the input with its own one-line error."""
    try:
        with fp_strict():
            return evaluate(scenario)
    except CalcError as exc:
        assert exc.message and "\n" not in exc.message
        return None


def q_nodes(doc: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every serialised quantity ({"value", "unit", "tag", "source"}) in a JSON document."""
    if isinstance(doc, dict):
        if {"value", "unit", "tag", "source"} <= doc.keys():
            yield path, doc
            return
        for k, v in doc.items():
            yield from q_nodes(v, f"{path}.{k}" if path else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from q_nodes(v, f"{path}[{i}]")


def assert_finite_or_not_feasible(result: Result) -> None:
    """The contract of issue 6: a number is finite, or its arm says it is not feasible and why.

    One more explicit gap is allowed: cost on an instance with no public price (the source says
    so and asks for --price-per-hour), which the JSON shows as null.
    """
    doc = result.to_json()
    json.dumps(doc, allow_nan=False)  # NaN would make the JSON invalid: it must be null
    price = result.resolved.instance.price(result.scenario.price_per_hour)
    unpriced = not math.isfinite(price.scalar)
    assert not unpriced or "price" in price.source
    infeasible = {name for name, arm in result.arms.items() if not arm.feasible}
    for name, arm in result.arms.items():
        assert arm.feasible or arm.why_not, name
    for path, q in q_nodes(doc):
        if q["value"] is None:
            head = path.split(".")
            in_dead_arm = head[0] == "arms" and head[1] in infeasible
            cost = path.endswith("usd_per_mtok") and unpriced
            comparison = head[0] != "arms" and bool(infeasible)
            assert in_dead_arm or cost or comparison, f"{path} is not finite: {q}"
        else:
            assert isinstance(q["value"], int | float) and math.isfinite(q["value"]), (path, q)
    v = result.verdict
    assert v.code in ("dense", "capacity", "deepep")
    if v.status == "nothing_fits":  # nothing to recommend: the verdict says so and names a fix
        assert v.recommended_arm == "none" and doc["verdict"]["recommended_arm"] is None
        assert not any(arm.feasible for arm in result.arms.values())
    else:
        assert v.recommended_arm in result.arms and result.arms[v.recommended_arm].feasible


def kernel_log_loss(rows: Any, table: Any) -> float:
    """Sum of squared log errors of a table's kernel predictions over fit rows: the loss the
    kernel fit minimises, written out here so tests check the fit against it, not against itself."""
    from deepep_calc.accuracy.validate import kernel_prediction

    total = 0.0
    for r in rows:
        pred = kernel_prediction(r, table)
        ref = r.ref
        if ref.total_us is not None:
            total += math.log(pred["total"] / ref.total_us) ** 2
            continue
        total += math.log(pred["dispatch"] / ref.dispatch_us) ** 2
        if ref.combine_us is not None:
            total += math.log(pred["combine"] / ref.combine_us) ** 2
    return total


def assert_per_user_never_rises(result: Result) -> None:
    """Over a result whose rows are rising concurrencies, no arm's per-user rate rises. A replica
    may change its one-node layout with the load (the best by aggregate): the rule holds along
    each layout's run of rows."""
    for arm in result.arms.values():
        pu = np.asarray(arm.per_user_tok_s.value)
        layout = np.broadcast_to(np.asarray(arm.layout), pu.shape)
        same = layout[1:] == layout[:-1]
        assert np.all((np.diff(pu) <= 1e-9 * pu[:-1]) | ~same), arm.name
