"""The planner's question, checked (`whatif/plan/request.py`): bad input is one line naming the
flag, before any work. The planner reads no file: a `--model` config.json is read once, by the
reader the face hands `plan_request`, and travels in the request; refusals keep their order and
their one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.base.errors import CalcError
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.hardware import PRICE_KINDS, load_instances
from deepep_calc.io.hf_config import load_hf_config
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.whatif.plan.card import card_for
from deepep_calc.whatif.plan.request import default_engines, default_instances
from deepep_calc.whatif.plan.search import plan_request, run_plan
from one_line import assert_one_line
from paths import FIXTURES

HF = FIXTURES / "hf"
SMALL = dict(isl=1024, osl=256, concurrency=16, instances="p5en", engines="vllm", max_nodes=2)


@pytest.fixture
def config(tmp_path: Path) -> str:
    """A private copy of a fixture config.json (a test may delete it)."""
    target = tmp_path / "config.json"
    shutil.copy(HF / "qwen3-30b-a3b-fp8" / "config.json", target)
    return str(target)


def test_a_config_json_is_read_once_by_the_faces_reader_and_never_by_the_planner(config):
    reads: list[str] = []

    def reader(path: str):
        reads.append(path)
        return load_hf_config(path)

    req = plan_request(model=config, read_model=reader, **SMALL)
    Path(config).unlink()  # the plan and its card must need nothing more from the disk
    plan = run_plan(req)
    assert plan.best is not None and plan.best.config["model"] == config
    assert card_for(plan) is not None
    assert reads == [config]


def test_a_spec_handed_in_gives_the_plan_the_reader_gives_and_the_request_stays_hashable(config):
    read = plan_request(model=config, read_model=load_hf_config, **SMALL)
    handed = plan_request(model=config, models={config: load_hf_config(config)}, **SMALL)
    assert read == handed and hash(read) == hash(handed)
    assert read.spec() == load_hf_config(config) and dict(read.models) == {config: read.spec()}
    assert run_plan(read).to_json() == run_plan(handed).to_json()
    assert plan_request(model="deepseek-v3", **SMALL).models == ()  # a preset needs no spec carried


def test_without_a_reader_a_path_is_refused_naming_model(config):
    with pytest.raises(CalcError) as info:
        plan_request(model=config, **SMALL)
    assert info.value.field == "--model"
    assert_one_line(info.value, config, "a preset here")


@pytest.mark.parametrize(
    ("fields", "field", "needle"),
    [
        ({"instances": "bogus"}, "--instances", "'bogus'"),  # the instances are checked first
        ({"engines": "bogus"}, "--engines", "'bogus'"),
        ({"max_nodes": 0}, "path", "no such file or folder"),  # the model before the node limit
        ({"concurrency": None}, "--concurrency", "give the load"),  # the load before all
    ],
)
def test_a_bad_path_is_refused_where_it_always_was(fields, field, needle):
    kwargs = dict(SMALL, **fields)
    with pytest.raises(CalcError) as info:
        plan_request(model="/nonexistent/config.json", read_model=load_hf_config, **kwargs)
    assert info.value.field == field
    assert_one_line(info.value, needle)


def test_the_cli_plans_a_config_json_as_the_library_does(capsys, config):
    args = ["--isl", "1024", "--osl", "256", "--concurrency", "16", "--instances", "p5en"]
    code, out, _ = run_cli(
        capsys, "plan", "--model", config, *args, "--engines", "vllm", "--max-nodes", "2", "--json"
    )
    assert code == 0
    assert (
        json.loads(out) == run_plan(plan_request(model=config, read_model=load_hf_config, **SMALL)).to_json()
    )
    code, _, err = run_cli(capsys, "plan", "--model", str(Path(config).parent / "missing.json"), *args)
    assert code == 2 and err.count("\n") == 1 and "missing.json: no such file or folder" in err


@pytest.mark.parametrize(
    ("fields", "field", "text"),
    [
        ({"concurrency": 4, "request_rate": 1.0}, "--request-rate", "not both"),
        ({}, "--concurrency", "give the load"),
        ({"request_rate": -2.0}, "--request-rate", "greater than 0"),
        ({"request_rate": float("nan")}, "--request-rate", "greater than 0"),
        ({"concurrency": 0}, "--concurrency", "greater than 0"),
        ({"concurrency": 4, "instances": "p5,p7"}, "--instances", "'p7'"),
        ({"concurrency": 4, "instances": "p5,,p5en"}, "--instances", "no empty items"),
        ({"concurrency": 4, "engines": "tgi"}, "--engines", "'tgi'"),
        ({"concurrency": 4, "max_nodes": 0}, "--max-nodes", "greater than 0"),
        ({"concurrency": 4, "max_nodes": 5000}, "--max-nodes", "at most"),
        ({"concurrency": 4, "slo_tok_s": 0.0}, "--slo-tok-s", "greater than 0"),
        ({"concurrency": 4, "budget_per_hour": -1.0}, "--budget-per-hour", "greater than 0"),
        ({"concurrency": 4, "price_per_hour": "p5=abc"}, "--price-per-hour", "a number"),
        ({"concurrency": 4, "price_per_hour": "p9=3"}, "--price-per-hour", "'p9'"),
        ({"concurrency": 4, "price_per_hour": "cheap"}, "--price-per-hour", "NAME=PRICE"),
        ({"concurrency": 4, "model": "no-such-model"}, "--model", "no-such-model"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(fields, field, text):
    with pytest.raises(CalcError) as info:
        plan_request(**fields)
    assert info.value.field == field
    assert text in info.value.message and "\n" not in info.value.message


@pytest.mark.parametrize(
    ("fields", "field", "text"),
    [
        ({"concurrency": True}, "--concurrency", "a whole number greater than 0"),  # a bool is no count
        ({"concurrency": 2.5}, "--concurrency", "a whole number greater than 0"),
        ({"concurrency": 4, "isl": 0}, "--isl", "a whole number greater than 0"),
        ({"concurrency": 4, "ttft_ms": float("inf")}, "--ttft-ms", "a finite number greater than 0"),
        ({"concurrency": 4, "slo_tok_s": "fast"}, "--slo-tok-s", "a number greater than 0"),
        ({"concurrency": 4, "price_per_hour": "p5=0"}, "--price-per-hour", "greater than 0"),
        ({"concurrency": 4, "price_per_hour": True}, "--price-per-hour", "NAME=PRICE"),
        ({"concurrency": 4, "layouts": "split"}, "--layouts", "one of all, aggregated, disaggregated"),
        ({"concurrency": 4, "disagg": "2P3D", "max_nodes": 4}, "--disagg", "this split needs 5"),
        ({"concurrency": 4, "disagg": "1P1D", "layouts": "aggregated"}, "--disagg", "no split"),
        ({"concurrency": 4, "layouts": "disaggregated", "max_nodes": 1}, "--max-nodes", "at least 2"),
        ({"request_rate": 2.0, "layouts": "disaggregated"}, "--layouts", "with --request-rate"),
        ({"concurrency": 4, "price_kinds": "spot"}, "--price-kinds", "'spot'"),
        ({"concurrency": 4, "price_kinds": ""}, "--price-kinds", "no empty items"),
    ],
)
def test_every_other_flag_is_refused_in_one_line_naming_it(
    fields: dict[str, Any], field: str, text: str
) -> None:
    with pytest.raises(CalcError) as info:
        plan_request(**fields)
    assert info.value.field == field
    assert_one_line(info.value, field, text)


def test_prices_are_one_for_every_instance_or_named_pairs() -> None:
    """A bare price (number or text) costs every instance searched; pairs name theirs, any case."""
    assert plan_request(concurrency=8, instances="p5,p5en", price_per_hour=50).prices == (
        ("p5", 50.0),
        ("p5en", 50.0),
    )
    assert plan_request(concurrency=8, instances="p5,p5en", price_per_hour="50").prices == (
        ("p5", 50.0),
        ("p5en", 50.0),
    )
    assert plan_request(concurrency=8, price_per_hour="p5=30, P5EN=40").prices == (
        ("p5", 30.0),
        ("p5en", 40.0),
    )
    assert plan_request(concurrency=8, price_per_hour={"p5": 12}).prices == (("p5", 12.0),)
    assert plan_request(concurrency=8).prices == ()


def test_names_are_checked_lower_cased_and_kept_once_in_the_order_given() -> None:
    assert plan_request(concurrency=8, instances=["p5en", "P5", "p5en"]).instances == ("p5en", "p5")
    assert plan_request(concurrency=8, price_kinds="Quote, on-demand").price_kinds == ("quote", "on-demand")
    assert plan_request(concurrency=8, price_kinds="all").price_kinds == PRICE_KINDS
    assert plan_request(concurrency=8).price_kinds == ()  # like with like


def test_the_defaults_search_every_efa_instance_and_every_engine() -> None:
    """The InfiniBand reference nodes have no AWS price: they are searched only when named."""
    req = plan_request(concurrency=8)
    assert req.instances == default_instances() and req.engines == default_engines() == tuple(load_engines())
    efa = [n for n, i in load_instances().items() if i.fabric == "efa"]
    assert list(default_instances()) == efa and "ib-h800" not in efa
    assert (req.max_nodes, req.layouts, req.disagg, req.measured_only) == (16, "all", None, False)


def test_the_request_states_its_targets_and_its_space() -> None:
    split = plan_request(concurrency=8, disagg="1P2D", max_nodes=4)
    assert split.disagg == (1, 2) and split.space_json()["disagg"] == "1P2D"
    assert "searched for a concurrency" in split.space_json()["disaggregated_note"]
    rate = plan_request(request_rate=3, slo_tok_s=10)
    assert rate.space_json()["disaggregated_note"] == "request-rate plans search aggregated layouts only"
    assert rate.space_json()["comms"] == [1, 2, 4, 8]
    assert rate.targets_json() == {
        "model": DEFAULTS["model"],
        "isl": DEFAULTS["isl"],
        "osl": DEFAULTS["osl"],
        "concurrency": None,
        "request_rate": 3.0,
        "slo_tok_s": 10.0,
        "ttft_ms": None,
        "budget_per_hour": None,
    }


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--disagg", "0P3D"], "--disagg"),
        (["--disagg", "2P3D", "--max-nodes", "4"], "--disagg"),
        (["--layouts", "disaggregated", "--max-nodes", "1"], "--max-nodes"),
    ],
)
def test_bad_plan_split_is_one_line_and_exit_2(capsys, args, field):
    code, _, err = run_cli(capsys, "plan", "--concurrency", "8", *args)
    assert (
        code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(f"deepep-calc: error: {field}:")
    )
