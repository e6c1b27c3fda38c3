"""`report/catalogs.py`: the rows of `models`, `instances` and `transports` (their JSON and their
tables share them) and the three terminal tables, whole at 80 columns and fuller at 200.

Row figures are checked against numbers worked by hand from the published structures and spec
sheets (an instance's network figure shows its unit conversion); the tables through the CLI
(`rendering.py`) and, for the narrow/wide choice, directly.
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from cli_runner import run
from deepep_calc.cli.program import CATALOGS
from deepep_calc.report import catalogs

from .rendering import WIDTHS, one_line, render


@pytest.mark.parametrize("width", WIDTHS)
def test_catalog_ids_and_numbers_are_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    models = render(capsys, monkeypatch, width, "models")
    for row in json.loads(render(capsys, monkeypatch, width, "models", "--json")):
        assert one_line(models, row["name"]), row["name"]
        assert one_line(models, f"{row['kv_bytes_per_token']:,}")
        assert one_line(models, f"{row['weights_gb']:,.1f}")
    instances = render(capsys, monkeypatch, width, "instances")
    for row in json.loads(render(capsys, monkeypatch, width, "instances", "--json")):
        assert one_line(instances, row["name"])
        if row["price_per_hour"] is not None:
            assert one_line(instances, f"{row['price_per_hour']:,.2f}")
    transports = render(capsys, monkeypatch, width, "transports")
    for row in json.loads(render(capsys, monkeypatch, width, "transports", "--json")):
        assert one_line(transports, row["name"])
        assert one_line(transports, f"{row['reference']['total_us']:,.1f} ●")


def test_headers_carry_units_not_snake_case(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = render(capsys, monkeypatch, 80, "models") + render(capsys, monkeypatch, 80, "instances")
    assert "hbm tb s" not in text and "network gb s" not in text and "_" not in text.split("\n", 3)[1]
    assert "TB/s" in text and "Gb/s/node" in text and "per token" in text


def test_a_wider_terminal_gets_more_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = render(capsys, monkeypatch, 80, "models")
    wide = render(capsys, monkeypatch, 200, "models")
    assert "Hugging Face id" in wide and "deepseek-ai/DeepSeek-V3" in wide
    assert "Hugging Face id" not in narrow
    assert "AWS name" in render(capsys, monkeypatch, 200, "instances")
    assert "runs on" in render(capsys, monkeypatch, 200, "transports")


def test_catalog_sources_come_with_sources(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = render(capsys, monkeypatch, 80, "models")
    listed = render(capsys, monkeypatch, 80, "models", "--sources")
    assert "--sources" in plain and "Sources" not in plain
    assert "Sources" in listed
    flat = " ".join(listed.split())
    for row in json.loads(render(capsys, monkeypatch, 80, "models", "--json")):
        assert " ".join(row["source"].split()) in flat, row["name"]


def test_a_wide_transports_table_shows_each_library_and_cost_per_selection(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = render(capsys, monkeypatch, 200, "transports")
    for row in json.loads(render(capsys, monkeypatch, 200, "transports", "--json")):
        line = next(x for x in wide.splitlines() if x.startswith(row["name"] + " "))
        assert f" {row['library']} " in line
        beta = f"{row['beta_dispatch_us']:.3f} / {row['beta_combine_us']:.3f}"
        # NVLink-only EP sends nothing off the node: its row shows no cost per remote selection
        assert (beta in line) != (row["fabric"] == "nvlink"), line
    assert "library" not in render(capsys, monkeypatch, 80, "transports").split("\n", 3)[2]


# the rows, against figures worked by hand ------------------------------------------------------


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


def test_model_rows_count_parameters_weights_and_kv_from_the_structure() -> None:
    """DeepSeek-V3 is the published 671 B total, 37 B active; its MLA cache holds (512 latent +
    64 rope) x 2 bytes x 61 layers = 70,272 bytes a token. Qwen3-30B-A3B: 48 layers x 4 KV heads x
    128 x 2 (K and V) x 2 bytes = 98,304; in BF16 its 30.5 B parameters weigh 2 bytes each."""
    rows = by_name(catalogs.models_rows())
    ds = rows["deepseek-v3"]
    assert (ds["experts"], ds["topk"], ds["hidden"], ds["layers"], ds["moe_layers"]) == (256, 8, 7168, 61, 58)
    assert ds["total_params_b"] == pytest.approx(671, abs=1) and ds["active_params_b"] == pytest.approx(
        37, abs=1
    )
    assert ds["kv_bytes_per_token"] == 70_272 and ds["attention"] == "mla"
    qwen = rows["qwen3-30b-a3b"]
    assert qwen["kv_bytes_per_token"] == 98_304
    assert qwen["weights_gb"] == pytest.approx(2 * qwen["total_params_b"], abs=0.1)
    assert rows["qwen3-30b-a3b-fp8"]["weights_gb"] < 0.55 * qwen["weights_gb"]  # FP8 halves it
    assert {r["tag"] for r in rows.values()} <= {"derived", "assumed"}
    assert all(r["source"] for r in rows.values())


def test_instance_rows_convert_the_network_to_gb_s_per_gpu_per_direction() -> None:
    """p5en: 3,200 Gb/s a node / 8 bits / 8 GPUs = 50 GB/s per GPU; p6-b300: 6,400 -> 100. NVLink
    is listed per direction, half the bidirectional figure (H200: 900 -> 450)."""
    rows = by_name(catalogs.instances_rows())
    assert (
        rows["p5en"]["network_gbit_per_node"] == 3200 and rows["p5en"]["network_gb_s_per_gpu_per_dir"] == 50
    )
    assert rows["p6-b300"]["network_gb_s_per_gpu_per_dir"] == 100
    assert rows["p5en"]["nvlink_gb_s_per_dir"] == 450
    assert all(r["tag"] == "assumed" for r in rows.values())
    assert {r["price_kind"] for r in rows.values()} - {None} <= set(catalogs.KIND_SHORT)


def test_transport_rows_list_their_reference_and_only_other_runs_of_its_cell() -> None:
    rows = by_name(catalogs.transports_rows())
    assert set(rows) >= {"efa-proxy", "efa-gda", "nvlink"}
    for r in rows.values():
        ref = r["reference"]
        assert ref["tag"] == "measured" and ref["total_us"] > 0
        assert all(
            o["source"] != ref["source"] or o["setting"] != ref["setting"]
            for o in r["other_runs_of_the_reference_cell"]
        )
        assert r["local_us"] > 0
    assert rows["nvlink"]["fabric"] == "nvlink" and rows["nvlink"]["other_runs_of_the_reference_cell"] == []


# the tables, narrow and wide -------------------------------------------------------------------


def printed(view, rows: list[dict], width: int, sources: bool = False) -> str:
    buf = io.StringIO()
    view(rows, sources, Console(file=buf, width=width, color_system=None, highlight=False, soft_wrap=False))
    return buf.getvalue()


def test_a_model_whose_experts_are_quantised_apart_is_starred() -> None:
    """gpt-oss keeps its routed experts in MXFP4 and the rest in BF16: the narrow table shows the
    experts' dtype starred, and one footnote says what the star means."""
    rows = [r for r in catalogs.models_rows() if r["name"] in ("gpt-oss-120b", "deepseek-v3")]
    text = printed(catalogs.print_models, rows, 80)
    line = next(x for x in text.splitlines() if x.startswith("gpt-oss-120b "))
    assert "mxfp4*" in line
    assert "* the routed experts' dtype; the rest of the model is in bf16" in text
    plain = printed(catalogs.print_models, [r for r in rows if r["name"] == "deepseek-v3"], 80)
    assert "*" not in plain


def test_an_instance_without_a_price_shows_a_dash_and_a_priced_one_its_kind() -> None:
    rows = by_name(catalogs.instances_rows())
    text = printed(catalogs.print_instances, [rows["p5"], rows["p6-b300"]], 80)
    assert one_line(text, "39.33 CB")  # p5: an AWS Capacity Block price
    line = next(x for x in text.splitlines() if x.startswith("p6-b300 "))
    assert "—" in line


def test_the_transports_note_names_each_reference_that_is_one_of_several_runs() -> None:
    rows = catalogs.transports_rows()
    several = [r for r in rows if r["other_runs_of_the_reference_cell"]]
    text = " ".join(printed(catalogs.print_transports, rows, 200).split())
    for r in several:
        assert f"{r['name']}: the reference ({r['reference']['total_us']:,.1f} µs) is the" in text
    assert "µs per message = the issue path's cost" in text
    assert "µs per message = the issue path" not in " ".join(
        printed(catalogs.print_transports, rows, 80).split()
    )


def test_sources_replace_the_hint_when_asked() -> None:
    rows = catalogs.models_rows()[:2]
    assert "sources of every row: deepep-calc models --sources" in printed(catalogs.print_models, rows, 80)
    listed = printed(catalogs.print_models, rows, 80, sources=True)
    assert "Sources" in listed and "--sources (or --json)" not in listed


def test_every_catalog_command_has_its_view() -> None:
    assert {title for _, title, _, _ in CATALOGS} == set(catalogs.VIEWS)
    assert {rows_of for _, _, rows_of, _ in CATALOGS} <= set(dir(catalogs))


def test_instances_show_visible_unit_conversion(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(["instances", "--json"], capsys)
    p5en = next(r for r in json.loads(out) if r["name"] == "p5en")
    assert p5en["network_gb_s_per_gpu_per_dir"] == 50.0
    assert "3200 Gb/s" in p5en["network_conversion"] and "/ 8 bit/B" in p5en["network_conversion"]
