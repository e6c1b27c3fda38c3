"""`deepep-calc plan` (`cli/commands/plan.py`): the JSON contract, one-line errors, the 80-column
table, the self-contained HTML file and its write rules, a rate instead of a concurrency, and
the plan flags spelled as evaluate spells them. (`/api/plan` and the `/plan` page are
tests/web/test_plan_routes.py's.)"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl

import click
import pytest

from cli_runner import run_cli
from deepep_calc.cli.commands import plan
from deepep_calc.question.scenario import Scenario
from web_fixtures import app, client  # noqa: F401  (fixtures)

from ..flags import SCENARIO, _command, _options, _words
from .plan_question import ARGS, cli_json  # noqa: F401  (fixture)

TOP = ["targets", "searched", "skipped", "best", "frontier", "nearest_misses", "note"]

POINT = [
    "config",
    "arm",
    "per_user_tok_s",
    "aggregate_tok_s",
    "ttft_ms",
    "usd_per_mtok",
    "memory_gb_per_gpu",
    "meets_targets",
]

Q_KEYS = {"value", "unit", "tag", "source"}


def check_point(p: dict) -> None:
    assert list(p)[: len(POINT)] == POINT  # the contract's keys, in its order, before any addition
    assert set(p["config"]) <= set(Scenario.field_names())
    assert p["arm"] in ("deepep", "allgather", "tp", "replica")
    for name in POINT[2:7]:
        q = p[name]
        assert Q_KEYS <= set(q) <= Q_KEYS | {"low", "high"}
        assert q["tag"] in ("measured", "derived", "assumed")
    assert isinstance(p["meets_targets"], bool)


def test_json_contract_keys_exactly(cli_json):  # noqa: F811
    assert list(cli_json)[: len(TOP)] == TOP
    assert isinstance(cli_json["searched"], int) and isinstance(cli_json["skipped"], int)
    assert set(cli_json["targets"]) >= {
        "model",
        "isl",
        "osl",
        "concurrency",
        "request_rate",
        "slo_tok_s",
        "ttft_ms",
    }
    assert isinstance(cli_json["note"], str) and cli_json["note"]
    check_point(cli_json["best"])
    assert cli_json["frontier"]
    for p in cli_json["frontier"] + cli_json["nearest_misses"]:
        check_point(p)
    assert "low" in cli_json["best"]["per_user_tok_s"]  # modelled figures carry their band


def test_the_best_config_feeds_evaluate_json_unchanged(capsys, cli_json):  # noqa: F811
    config = cli_json["best"]["config"]
    flags = []
    for k, v in config.items():
        if v is None:
            continue
        if k == "cuda_graphs":
            flags.append("--cuda-graphs" if v else "--eager")
            continue
        flags += [f"--{k.replace('_', '-')}", str(v)]
    code, out, _ = run_cli(capsys, "evaluate", *flags, "--json")
    assert code == 0
    arm = json.loads(out)["arms"][cli_json["best"]["arm"]]
    for name in POINT[2:7]:
        assert arm[name]["value"] == pytest.approx(cli_json["best"][name]["value"], rel=1e-9)


# The command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--concurrency", "8", "--request-rate", "2"], "not both"),
        (["--request-rate", "-1"], "--request-rate"),
        (["--concurrency", "8", "--instances", "p5,p7"], "'p7'"),
        (["--concurrency", "8", "--max-nodes", "0"], "--max-nodes"),
        (["--concurrency", "abc"], "--concurrency"),
        ([], "give the load"),
        (["--concurrency", "8", "--instances", "p6-b300"], "no price for p6-b300"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(capsys, args, needle):
    code, out, err = run_cli(capsys, "plan", "--model", "deepseek-v3", *args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deepep-calc: error: ") and needle in lines[0]


def test_cli_says_when_nothing_meets_the_targets(capsys):
    code, out, err = run_cli(capsys, *ARGS[:-2], "--max-nodes", "2", "--slo-tok-s", "100000")
    assert code == 0, err
    assert "Nothing in the search meets every target." in out
    assert "would meet them: lower --slo-tok-s to" in out
    assert "Closest misses" in out


def test_cli_budget_below_the_cheapest_node(capsys):
    code, out, _ = run_cli(capsys, *ARGS, "--budget-per-hour", "1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["best"] is None
    assert data["changes"][0].startswith("raise --budget-per-hour to ")
    assert "raise --budget-per-hour" in data["note"]


def test_terminal_output_reads_at_80_columns(capsys):
    code, out, _ = run_cli(capsys, *ARGS)
    assert code == 0
    assert "Cheapest meeting every target" in out and "Frontier" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert re.search(r"\d a ", out)  # a tag letter after the numbers
    code, out, _ = run_cli(capsys, *ARGS[:-2], "--max-nodes", "2", "--slo-tok-s", "100000")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_html_file_is_self_contained_and_links_each_point_to_its_card(capsys, tmp_path, client):  # noqa: F811
    from deepep_calc.web.inputs import request_from_form

    path = tmp_path / "plan.html"
    code, out, err = run_cli(capsys, *ARGS, "--html", path)
    assert code == 0, err
    assert f"wrote {path}" in out
    text = path.read_text()
    assert "<script src=" not in text and "https://" not in text.split("<script>", 1)[0]
    assert "Plotly" in text and 'id="plan-figure"' in text
    fig = json.loads(re.search(r'id="plan-figure">(.*?)</script>', text, re.S).group(1))
    queries = [q for trace in fig["data"] for q in trace["customdata"]]
    assert len(queries) > 10
    plan = json.loads(run_cli(capsys, *ARGS, "--json")[1])
    best = plan["best"]
    assert best["card_url"][2:] in queries
    # the card link is the scenario: the page's own parser turns it back into the same config
    scenario = request_from_form(dict(parse_qsl(best["card_url"][2:]))).to_scenario()
    assert scenario == Scenario(**best["config"])
    page = client.get(best["card_url"])
    assert page.status_code == 200 and best["config"]["instance"] in page.text


def test_html_to_a_missing_folder_is_one_line_and_nothing_written(capsys, tmp_path):
    target = tmp_path / "no" / "plan.html"
    code, _, err = run_cli(capsys, *ARGS, "--html", target)
    assert code == 2 and "does not exist" in err and not target.exists()
    code, _, err = run_cli(capsys, "plan", "--model", "deepseek-v3", "--html", tmp_path / "x.html")
    assert code == 2 and not (tmp_path / "x.html").exists()


def test_html_target_is_checked_before_the_search_and_follows_the_write_rules(capsys, tmp_path, monkeypatch):
    """A folder or a read-only file is refused before any search runs, and stays as it was;
    `--html -` streams the page to stdout with nothing beside it; `--html -` with `--json`
    would mix two documents on one stream and is refused."""
    import os

    import deepep_calc.whatif.plan.search

    real_run_plan = deepep_calc.whatif.plan.search.run_plan

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran before the target was checked")

    monkeypatch.setattr(deepep_calc.whatif.plan.search, "run_plan", no_search)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    code, out, err = run_cli(capsys, *ARGS, "--html", folder)
    assert code == 2 and out == "" and "is a directory" in err and len(err.strip().splitlines()) == 1
    assert folder.is_dir() and list(folder.iterdir()) == []
    locked = tmp_path / "locked.html"
    locked.write_text("keep me")
    os.chmod(locked, 0o444)
    code, _, err = run_cli(capsys, *ARGS, "--html", locked)
    assert code == 2 and "read-only" in err and locked.read_text() == "keep me"
    monkeypatch.setattr(deepep_calc.whatif.plan.search, "run_plan", real_run_plan)
    code, out, err = run_cli(capsys, *ARGS, "--html", "-")
    assert code == 0 and out.lstrip().lower().startswith("<!doctype html") and "wrote" not in err
    assert out.rstrip().endswith("</html>") and out.lower().count("<!doctype") == 1  # only the page
    code, out, err = run_cli(capsys, *ARGS, "--html", "-", "--json")
    assert code == 2 and out == "" and "--json" in err


def test_json_with_html_keeps_stdout_pure_json(capsys, tmp_path):
    code, out, err = run_cli(capsys, *ARGS, "--json", "--html", tmp_path / "p.html")
    assert code == 0
    json.loads(out)
    assert "wrote" in err


def test_rate_plan_on_the_cli(capsys):
    code, out, _ = run_cli(
        capsys,
        "plan",
        "--model",
        "deepseek-v3",
        "--isl",
        "1024",
        "--osl",
        "256",
        "--request-rate",
        "2",
        "--instances",
        "p5en",
        "--engines",
        "vllm",
        "--max-nodes",
        "2",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["targets"]["request_rate"] == 2.0 and data["targets"]["concurrency"] is None
    assert data["best"]["sustainable"] is True and data["best"]["config"]["concurrency"] >= 1


def test_a_dagger_stays_beside_its_configuration_at_80_columns(capsys):
    """An assumed-evidence row's dagger wrapped onto a line of its own at 80 columns."""
    code, out, _ = run_cli(
        capsys, "plan", "--model", "deepseek-v3", "--concurrency", "256", "--price-kinds", "all"
    )
    assert code == 0
    table = out.split("Frontier", 1)[1].split("† outside the measured evidence", 1)[0]
    assert "†" in table  # the search includes configurations outside the measured evidence
    assert not any(line.strip() == "†" for line in table.splitlines())


def test_plan_spells_its_scenario_flags_as_evaluate_does() -> None:
    """plan's search lists answer to evaluate's singular names too; its other shared flags match."""
    options = _options(_command("plan"))
    assert options["--instance"] is options["--instances"]
    assert options["--engine"] is options["--engines"]
    for name in ("--model", "--isl", "--osl", "--concurrency", "--slo-tok-s", "--ttft-ms", "--max-batch"):
        assert _words(options[name]) == _words(SCENARIO[name]), name


def test_register_adds_the_plan_command() -> None:
    group = click.Group()
    plan.register(group)
    assert group.commands == {"plan": plan.plan_cmd}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--layouts", "both"], "'both' is not one of 'all', 'aggregated', 'disaggregated'"),
        (["--disagg", "3X"], "--disagg"),
    ],
)
def test_layout_choices_are_refused_in_one_line(capsys, args, needle) -> None:
    code, out, err = run_cli(capsys, "plan", "--model", "deepseek-v3", "--concurrency", "8", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err
