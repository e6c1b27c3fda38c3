"""Every price says what it is, and a plan ranks like with like (issue #26, smaller items).

A Capacity Block price (p5), an on-demand list price (p5en) and a price quoted without a
checked source (p6-b200) were ranked against each other without a word. Now each catalog price
has a `price_kind` (`tests/catalog/test_hardware_prices.py`); `plan` ranks one kind (on-demand
when one is searched) and says which instances it searched but did not rank; `--price-kinds all`
mixes them on purpose, and a price the user types is theirs and always ranked.
"""

from __future__ import annotations

import json

from cli_runner import run_cli
from deepep_calc.whatif.plan.search import plan_request, run_plan

QUESTION = {"model": "deepseek-v3", "concurrency": 64, "max_nodes": 4}


def _compared_instances(plan) -> set[str]:
    """Instances of the ranked rows, split (disaggregated) rows included: a row's family
    names its instance, whichever table it came from."""
    s = plan.scan
    return {s.families[s.rows["family"][i]].instance.name for i in s.cols.compared.nonzero()[0]}


def test_a_plan_ranks_one_kind_of_price_and_says_which_it_left() -> None:
    plan = run_plan(plan_request(**QUESTION))
    assert _compared_instances(plan) == {"p5en"}
    doc = plan.to_json()
    assert doc["price_kinds"]["ranked"] == ["on-demand"] and not doc["price_kinds"]["mixed_on_purpose"]
    reasons = " ".join(doc["skipped_reasons"])
    assert "a Capacity Block price, not ranked with on-demand" in reasons
    assert "a quote price, not ranked with on-demand" in reasons
    for p in [doc["best"], *doc["frontier"]]:
        assert p["price_kind"] == "on-demand" and p["config"]["instance"] == "p5en"


def test_mixing_on_purpose_and_typed_prices() -> None:
    mixed = run_plan(plan_request(**QUESTION, price_kinds="all"))
    assert _compared_instances(mixed) == {"p5", "p5en", "p6-b200"}
    assert mixed.to_json()["price_kinds"]["mixed_on_purpose"]
    typed = run_plan(plan_request(**QUESTION, price_per_hour="p5=30"))
    assert "p5" in _compared_instances(typed)  # the user's own price is ranked
    assert "p6-b200" not in _compared_instances(typed)
    only = run_plan(plan_request(**QUESTION, instances="p5"))  # one kind searched: nothing to mix
    assert _compared_instances(only) == {"p5"} and only.best is not None
    assert only.best.price_kind == "capacity-block"


def test_the_faces_say_it(capsys) -> None:
    code, out, _ = run_cli(
        capsys, "plan", "--model", "deepseek-v3", "--concurrency", "64", "--max-nodes", "4"
    )
    assert code == 0
    flat = " ".join(out.split())
    assert (
        "Ranked on on-demand prices only (p5en); searched, not ranked: p5 (Capacity Block), p6-b200 (quote)"
        in flat
    )
    code, out, _ = run_cli(
        capsys,
        "plan",
        "--model",
        "deepseek-v3",
        "--concurrency",
        "64",
        "--max-nodes",
        "4",
        "--price-kinds",
        "all",
    )
    assert "ranked together, as asked" in " ".join(out.split())
    code, out, err = run_cli(
        capsys, "plan", "--model", "deepseek-v3", "--concurrency", "64", "--price-kinds", "spot"
    )
    assert code == 2 and "--price-kinds" in err and err.count("\n") == 1
    code, out, _ = run_cli(capsys, "instances", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["p5"]["price_kind"] == "capacity-block"
