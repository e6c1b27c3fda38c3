"""The planner reads no file: a `--model` config.json is read once, by the reader the face hands
`plan_request`, and travels in the request; refusals keep their order and their one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_runner import run_cli
from deepep_calc.base.errors import CalcError
from deepep_calc.io.hf_config import load_hf_config
from deepep_calc.whatif.plan.card import card_for
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
