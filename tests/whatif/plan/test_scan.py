"""One scan of the plan's space (`whatif/plan/scan.py`): measured cells patched in, rows
without a price skipped with the reason, each row's configuration, the families searched and
the kinds of price ranked together (the whole plan's price kinds: `test_scan_price_kinds.py`)."""

from __future__ import annotations

import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.question.scenario import Scenario
from deepep_calc.whatif.plan.scan import Meter, families_for, kind_reason, ranked_kinds
from deepep_calc.whatif.plan.search import plan_request, run_plan

from .small import rel


def test_a_measured_cell_in_the_search_carries_the_measurement():
    """At the default scenario the plan's figures are the measured cell's, as evaluate()'s are."""
    p = run_plan(
        plan_request(
            model="qwen3-30b-a3b-fp8",
            isl=120,
            osl=128,
            concurrency=32,
            instances="p5en",
            engines="trtllm",
            max_nodes=2,
        )
    )
    c = p.scan.cols
    idx = [
        i
        for i in range(p.scan.search.size)
        if p.scan.rows["nodes"][i] == 2
        and not p.scan.rows["graphs"][i]
        and p.scan.rows["arm"][i] == 0
        and p.scan.rows["comms"][i] == 8
        and p.scan.search.block_of(i).transport == "efa-proxy"
    ]
    assert len(idx) == 1
    i = idx[0]
    cell = evaluate(Scenario()).arms["deepep"]
    assert cell.measured_cell is not None
    assert rel(float(c.per_user[i]), float(cell.per_user_tok_s.value)) < 1e-12
    assert int(p.scan.search.rows.tags["per_user_tok_s"][i]) == int(cell.per_user_tok_s.tag)


def test_an_instance_without_a_price_is_skipped_with_the_reason_and_a_price_brings_it_in():
    base = dict(model="deepseek-v3", isl=1024, osl=256, concurrency=64, engines="vllm", max_nodes=2)
    p = run_plan(plan_request(**dict(base, instances="p5en,p6-b300")))
    reason = [r for r in p.skipped_reasons if "p6-b300" in r]
    assert reason and "--price-per-hour p6-b300=" in reason[0]
    assert all(pt.config["instance"] != "p6-b300" for pt in p.frontier)
    with pytest.raises(CalcError, match="nothing left to search"):
        run_plan(plan_request(**dict(base, instances="p6-b300")))
    priced = run_plan(plan_request(**dict(base, instances="p6-b300", price_per_hour="p6-b300=100")))
    assert priced.best is not None and priced.best.config["price_per_hour"] == 100.0
    again = evaluate(Scenario(**priced.best.config)).arms[priced.best.arm]
    assert rel(priced.best.figures["usd_per_mtok"].scalar, float(again.usd_per_mtok.value)) < 1e-9


def test_config_names_are_exactly_scenario_fields(small):
    for p in [small.best, *small.frontier]:
        assert set(p.config) <= set(Scenario.field_names())
        assert Scenario(**p.config).max_qps == DEFAULTS["max_qps"]


def test_a_batch_limit_is_part_of_every_configuration_and_caps_the_rate():
    base = dict(model="deepseek-v3", isl=1024, osl=256, instances="p5en", engines="vllm", max_nodes=2)
    p = run_plan(plan_request(**base, concurrency=256, max_batch=4))
    assert p.best.config["max_batch"] == 4
    arm = evaluate(Scenario(**p.best.config)).arms[p.best.arm]
    assert rel(p.best.figures["usd_per_mtok"].scalar, float(arm.usd_per_mtok.value)) < 1e-9
    assert arm.running.scalar < 256  # the limit binds: the rest queue
    free = run_plan(plan_request(**base, request_rate=2.0))
    capped = run_plan(plan_request(**base, request_rate=2.0, max_batch=1))
    assert capped.scan.rate.max_rate_per_s.max() < free.scan.rate.max_rate_per_s.max()


# Families, prices and progress -------------------------------------------------------------------


def test_families_are_instance_by_engine_by_dtype_each_with_the_price_it_is_costed_at() -> None:
    """A BF16 model (FP8 searched too) on p5, priced by the user at 30 $/h, and p6-b300, which
    has no catalog price: 2 instances x 2 engines x 2 dtypes, numbered in that order."""
    req = plan_request(
        model="qwen3-235b-a22b",
        concurrency=8,
        instances="p5,p6-b300",
        engines="vllm,sglang",
        price_per_hour="p5=30",
    )
    fams = families_for(req)
    assert [f.index for f in fams] == list(range(8))
    assert [(f.instance.name, f.engine, f.weight_dtype) for f in fams[:4]] == [
        ("p5", "vllm", None), ("p5", "vllm", "fp8"), ("p5", "sglang", None), ("p5", "sglang", "fp8"),
    ]  # fmt: skip
    assert all((f.price, f.price_given, f.price_kind) == (30.0, True, "given") for f in fams[:4])
    assert all((f.price, f.price_given, f.price_kind) == (None, False, None) for f in fams[4:])
    listed = families_for(plan_request(model="deepseek-v3", concurrency=8, instances="p5", engines="vllm"))
    p5 = load_instances()["p5"]  # the catalog's price and its kind, when none is typed
    assert [(f.price, f.price_given, f.price_kind) for f in listed] == [
        (p5.price_per_hour, False, "capacity-block")
    ]


@pytest.mark.parametrize(
    ("fields", "ranked"),
    [
        ({"instances": "p5en,p5,p6-b200"}, ("on-demand",)),  # on-demand when one is searched
        ({"instances": "p6-b200,p5"}, ("capacity-block",)),  # else Capacity Block before quote
        ({"instances": "p6-b200"}, ("quote",)),
        ({"instances": "p6-b300"}, ()),  # no price at all
        ({"instances": "p5,p6-b200", "price_per_hour": "p5=3"}, ("quote",)),  # a typed price is not a kind
        ({"price_kinds": "quote,capacity-block"}, ("quote", "capacity-block")),  # as asked
    ],
)
def test_a_plan_ranks_like_with_like_unless_asked(fields: dict[str, str], ranked: tuple[str, ...]) -> None:
    assert ranked_kinds(plan_request(model="deepseek-v3", concurrency=8, **fields)) == ranked


def test_the_reason_a_price_is_not_ranked_names_both_kinds() -> None:
    assert (
        kind_reason("quote", ("on-demand",)) == "a quote price, not ranked with on-demand (--price-kinds all)"
    )
    assert kind_reason("capacity-block", ("quote", "on-demand")) == (
        "a Capacity Block price, not ranked with quote or on-demand (--price-kinds all)"
    )
    assert kind_reason("quote", ()) == "a quote price, not ranked with the ranked kind (--price-kinds all)"
    # the article follows the word, and the user's own price is not "a your own price price"
    assert kind_reason("on-demand", ("quote",)).startswith("an on-demand price, not ranked with quote")
    assert kind_reason("given", ("on-demand",)).startswith("your own price, not ranked with on-demand")


def test_the_meter_counts_passes_and_grows_its_total_as_the_plan_learns_its_size() -> None:
    seen: list[tuple[int, int]] = []
    meter = Meter(lambda done, total: seen.append((done, total)))
    meter.expect(2)
    meter.tick()
    meter.tick()
    meter.tick()  # one more than expected: the total follows
    meter.expect(2)
    meter.tick()
    assert seen == [(1, 2), (2, 2), (3, 3), (4, 5)]
    quiet = Meter(None)
    quiet.tick()
    assert (quiet.done, quiet.total) == (1, 1)
