"""The break-even answers' record and words (`whatif/breakeven/search.py`): an answer's JSON, a
row of a vectorised figure, a count and its noun, and why an arm cannot serve."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif.breakeven.search import Answer, _at, plural, why_not_served


@pytest.mark.parametrize(
    ("n", "word", "digits", "text"),
    [
        (1, "node", 0, "1 node"),
        (2, "node", 0, "2 nodes"),
        (0, "node", 0, "0 nodes"),
        (1234, "request", 0, "1,234 requests"),
        (0.6, "token", 0, "1 token"),  # the count as printed decides: 0.6 prints as 1
        (1.5, "node", 0, "2 nodes"),
        (1, "token", 1, "1.0 tokens"),  # "1.0" is not "1": plural
    ],
)
def test_plural_agrees_with_the_count_as_printed(n: float, word: str, digits: int, text: str) -> None:
    assert plural(n, word, digits) == text


def test_at_reads_one_row_and_a_value_that_did_not_vary_holds_for_every_row() -> None:
    q = Q(np.array([1.0, 2.0, 3.0]), "ms", Tag.DERIVED, "three rows")
    row = _at(q, 1)
    assert (row.value, row.unit, row.tag, row.source) == (2.0, "ms", Tag.DERIVED, "three rows")
    assert type(row.value) is float
    assert _at(q).scalar == 1.0  # row 0 by default
    assert _at(q, 9).scalar == 3.0  # past the end: the last row
    assert _at(Q.measured(5.0, "ms", "one value"), 4).scalar == 5.0


def test_an_answer_is_json_with_or_without_a_value() -> None:
    value = Q.derived(3.0, "nodes", "a search")
    check = {"ratio_at": Q.assumed(1.02, "x", "the model")}
    full = Answer("ep_nodes", "Fewest nodes?", value, "From 3 nodes.", check).to_json()
    assert full == {
        "key": "ep_nodes",
        "question": "Fewest nodes?",
        "value": {"value": 3.0, "unit": "nodes", "tag": "derived", "source": "a search"},
        "note": "From 3 nodes.",
        "short": "",
        "check": {"ratio_at": {"value": 1.02, "unit": "x", "tag": "assumed", "source": "the model"}},
    }
    never = Answer("qps_kernel", "Where?", None, "Never.", short="never").to_json()
    assert never["value"] is None and never["short"] == "never" and never["check"] == {}
    json.dumps(full, allow_nan=False)


def test_why_not_served_names_the_first_thing_that_stops_the_arm() -> None:
    """Memory first, then the expert split, else the prompt ceiling. The default question runs
    128 experts on 2 nodes of 8 GPUs: EP16."""
    r = resolve(Scenario())
    assert (r.model.experts, r.scenario.nodes * r.gpus_per_node) == (128, 16)
    arm = SimpleNamespace(fits_memory=np.array([True, False]), splits=np.array([False]))
    assert why_not_served(r, arm) == "it does not fit in HBM"
    arm = SimpleNamespace(fits_memory=True, splits=np.array([True, False]))
    assert why_not_served(r, arm) == "128 experts do not split evenly over EP16"
    arm = SimpleNamespace(fits_memory=True, splits=True)
    assert why_not_served(r, arm).startswith("its first token comes after the prompt ceiling")
