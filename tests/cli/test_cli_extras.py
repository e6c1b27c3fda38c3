"""The small things a first session trips over: `python -m`, bare `--json`, `report` to stdout,
shell completion of catalog names, one full stop per sentence, API errors in JSON names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.shell_completion import BashComplete

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.cli import program
from deepep_calc.report.markdown import render_markdown
from paths import REPO

REPO = REPO


def test_bare_json_is_the_default_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, bare, _ = run_cli(capsys, "--json")
    assert code == 0
    code, explicit, _ = run_cli(capsys, "evaluate", "--json")
    assert code == 0
    assert json.loads(bare) == json.loads(explicit)
    assert json.loads(bare)["verdict"]["code"] == "dense"


def test_json_before_a_command_says_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "--json", "kernel")
    assert code == 2 and out == ""
    assert "deepep-calc kernel --json" in err and err.count("\n") == 1


def test_report_without_a_file_prints_markdown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "report", "--nodes", "4")
    assert code == 0, err
    assert out.startswith("# deepep-calc report\n")
    assert "## The arms" in out and "--nodes 4" in out
    assert list(tmp_path.iterdir()) == []  # nothing written


DOUBLED = re.compile(r"\.\.(?!\.)|[.:;,] ?[.;,]|\) ?\.\)")
SCENARIOS = [
    Scenario(),
    Scenario(  # a fragile verdict
        model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, transport="efa-uccl", concurrency=8
    ),
    Scenario(model="kimi-k2", instance="p5", nodes=1),
    Scenario(instance="p6-b300", transport="efa-gda"),
    Scenario(slo_tok_s=50, ttft_ms=10, alternative="tp"),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.model}-{s.instance}-{s.nodes}")
def test_markdown_report_has_no_doubled_punctuation(scenario: Scenario) -> None:
    text = render_markdown(evaluate(scenario))
    hits = [
        m.group(0) for line in text.splitlines() if not line.startswith("|") for m in DOUBLED.finditer(line)
    ]
    assert hits == []


def test_fragile_robustness_line_keeps_one_full_stop() -> None:
    result = evaluate(SCENARIOS[1])
    assert result.verdict.robustness.endswith(".")  # the case that used to print ".."
    line = next(x for x in render_markdown(result).splitlines() if x.startswith("Verdict is"))
    assert line.endswith(".") and not line.endswith("..")


def complete(*words: str) -> list[str]:
    program._load_extensions()
    *args, incomplete = words
    comp = BashComplete(program.app, {}, "deepep-calc", "_DEEPEP_CALC_COMPLETE")
    return [item.value for item in comp.get_completions(list(args), incomplete)]


def test_completion_of_catalog_names() -> None:
    assert complete("evaluate", "--instance", "p6") == ["p6-b200", "p6-b300"]
    assert complete("report", "--engine", "") == ["trtllm", "vllm", "sglang"]
    assert "efa-gda" in complete("breakeven", "--transport", "efa-")
    assert "deepseek-v3" in complete("evaluate", "--model", "deep")
    assert complete("kernel", "--transport", "ib") == ["ib-ibgda"]


def test_completion_of_lists_and_paths() -> None:
    assert complete("sweep", "--instance", "p5,p6-b3") == ["p5,p6-b300"]
    assert complete("sweep", "--transport", "efa-proxy,nv") == ["efa-proxy,nvlink"]
    comp = BashComplete(program.app, {}, "deepep-calc", "_DEEPEP_CALC_COMPLETE")
    items = comp.get_completions(["evaluate", "--model"], "./configs/")
    assert [i.type for i in items] == ["file"]  # a path: the shell completes files


def test_readme_documents_completion() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "_DEEPEP_CALC_COMPLETE=bash_source" in readme
    assert "_DEEPEP_CALC_COMPLETE=zsh_source" in readme


BAD_BODIES = [
    ({"nodes": -1}, "nodes"),
    ({"nodes": "x"}, "nodes"),
    ({"max_qps": 0}, "max_qps"),
    ({"gpus_per_node": 99}, "gpus_per_node"),
    ({"instance": "zz"}, "instance"),
    ({"topk": 999}, "topk"),
    ({"weight_dtype": "fp3"}, "weight_dtype"),
    ({"transport": "efa-gda", "instance": "p5"}, "transport"),
    ({"price_per_hour": -5.0}, "price_per_hour"),
    ({"eager": 1}, "eager"),
]


@pytest.mark.parametrize(("body", "name"), BAD_BODIES, ids=[n for _, n in BAD_BODIES])
def test_api_errors_name_json_fields_not_flags(body: dict, name: str) -> None:
    from fastapi.testclient import TestClient

    from deepep_calc.web.app import create_app

    with TestClient(create_app()) as client:
        resp = client.post("/api/evaluate", json=body)
    assert resp.status_code == 422
    message = resp.json()["error"]
    outside_backticks = message.split("`")[::2]
    assert not any("--" in part for part in outside_backticks), message
    assert message.startswith(f"{name}: "), message
