"""Instance prices (`catalog/hardware.py`): an input tagged assumed, cited with a date, always
overridable, and each of a kind (`price_kind`: on-demand, capacity block, quote) that a row
with a price must state."""

from __future__ import annotations

import math
import re

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Tag
from deepep_calc.base.records import RecordError
from deepep_calc.catalog.hardware import PRICE_KINDS, Instance, load_instances

AWS = [name for name, i in load_instances().items() if i.fabric == "efa"]


@pytest.mark.parametrize("name", AWS)
def test_every_aws_price_is_cited_and_dated_or_says_how_to_give_one(name: str) -> None:
    i = load_instances()[name]
    if i.price_per_hour is None:
        assert "--price-per-hour" in i.price_source
    else:
        assert i.price().tag is Tag.ASSUMED
        assert "on-demand" in i.price_source.lower() or "capacity block" in i.price_source.lower()


def test_p6_b200_has_an_on_demand_price_that_says_verify_locally() -> None:
    i = load_instances()["p6-b200"]
    assert i.price_per_hour is not None and 50 < i.price_per_hour < 300
    assert "verify locally" in i.price_source
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", i.price_source)  # the date it was written down


def test_p6_b200_cost_is_a_number_and_the_override_wins() -> None:
    base = evaluate(Scenario(instance="p6-b200", transport="efa-gda"))
    cost = base.arms["allgather"].usd_per_mtok
    assert math.isfinite(cost.scalar) and cost.tag is Tag.ASSUMED
    assert "p6-b200" in cost.source
    doubled = evaluate(
        Scenario(
            instance="p6-b200",
            transport="efa-gda",
            price_per_hour=2 * load_instances()["p6-b200"].price_per_hour,
        )
    )
    assert doubled.arms["allgather"].usd_per_mtok.scalar == pytest.approx(2 * cost.scalar)
    assert "user-given" in doubled.arms["allgather"].usd_per_mtok.source


def test_unpriced_instance_takes_the_override() -> None:
    unpriced = evaluate(Scenario(instance="p6-b300", transport="efa-gda"))
    if math.isfinite(unpriced.arms["allgather"].usd_per_mtok.scalar):
        pytest.fail("p6-b300 got a price: extend the test above to it")
    priced = evaluate(Scenario(instance="p6-b300", transport="efa-gda", price_per_hour=150.0))
    assert math.isfinite(priced.arms["allgather"].usd_per_mtok.scalar)


def test_every_catalog_price_has_a_kind() -> None:
    for name, inst in load_instances().items():
        assert (inst.price_kind is None) == (inst.price_per_hour is None), name
        assert inst.price_kind is None or inst.price_kind in PRICE_KINDS
    kinds = {n: i.price_kind for n, i in load_instances().items() if i.price_kind}
    assert kinds == {"p5": "capacity-block", "p5en": "on-demand", "p6-b200": "quote"}
    row = load_instances()["p5en"].as_dict()
    row["price_kind"] = None
    with pytest.raises((RecordError, ValueError)):
        Instance.validate(row)
