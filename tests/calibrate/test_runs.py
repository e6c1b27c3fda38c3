"""Assembling the user's runs (`calibrate/runs.py`): one workload checked across every run (the
refusals name the files), each run placed at a concurrency and an EP_NUM_COMMS and paired with its
dense twin, and the measured cells built from them, which `evaluate --calibration` replays
exactly and only in the mode they ran.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.calibrate.runs import CELL_PREFIX, assemble, build_cells
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.question.scenario import Scenario
from one_line import assert_one_line

from .user_runs import (
    PAIR_SCENARIO,
    PREFIX,
    REAL,
    TRT_DEEPEP,
    TRT_DENSE,
    run,
    run_json,
    trt_set,
    vllm,
)

SHIM_C4 = REAL / f"trtllm-0.21_{PREFIX}_deepep-shim_c4_isl120.json"  # a DeepEP run that names no comms

# --------------------------------------------------------------------------------------------
# the real fixtures


def test_evaluate_replays_the_pair_exactly(capsys: pytest.CaptureFixture[str], trt_profile: Path) -> None:
    d = run_json(capsys, "evaluate", "--calibration", trt_profile, *PAIR_SCENARIO)
    dee, alt = d["arms"]["deepep"], d["arms"]["allgather"]
    assert dee["measured_cell"] == alt["measured_cell"] == "your-c4-k1"
    assert (
        round(dee["per_user_tok_s"]["value"], 2) == 19.27
        and round(alt["per_user_tok_s"]["value"], 2) == 28.06
    )
    assert round(dee["step_ms"]["value"], 2) == 51.90 and abs(alt["step_ms"]["value"] - 35.64) < 0.01
    for arm in (dee, alt):
        for metric in ("per_user_tok_s", "step_ms", "aggregate_tok_s", "ttft_ms"):
            assert arm[metric]["tag"] == "measured"
            assert "trt.toml" in arm[metric]["source"] and "e27e731ea174" in arm[metric]["source"]
    assert abs(d["tax_ms_per_token"]["value"] - 16.3) < 0.05

    code, out, _ = run(capsys, "evaluate", "--calibration", trt_profile, *PAIR_SCENARIO)
    assert code == 0 and "51.90 ms" in out and "19.3 tok/s ●" in out


def test_cells_replay_only_in_the_mode_they_ran(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Runs taken with CUDA graphs and EP_EFA_MAX_QPS=4 replay only at those settings."""
    out = tmp_path / "graphs.toml"
    mode = ["--cuda-graphs", "--max-qps", "4"]
    run_json(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, *mode, "-o", out)
    same = run_json(capsys, "evaluate", "--calibration", out, *PAIR_SCENARIO, *mode)
    assert same["arms"]["deepep"]["measured_cell"] == "your-c4-k1"
    assert round(same["arms"]["deepep"]["step_ms"]["value"], 2) == 51.90
    eager = run_json(capsys, "evaluate", "--calibration", out, *PAIR_SCENARIO, "--max-qps", "4")
    assert eager["arms"]["deepep"]["measured_cell"] is None
    # eager at the default QPs is the catalog's own cell for this pair, not the user's graphs run
    default = run_json(capsys, "evaluate", "--calibration", out, *PAIR_SCENARIO)
    assert default["arms"]["deepep"]["measured_cell"] == "trt-ab-k1-c4"


def test_vllm_multicomm_set(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "v.toml"
    args = [a for k in (1, 8) for c in (4, 8, 32) for a in ("--deepep", vllm(k, c))]
    s = run_json(capsys, "calibrate", *args, "-o", out)
    assert s["scenario"]["engine"] == "vllm"
    assert sorted((r["concurrency"], r["comms"]) for r in s["measured"]) == [
        (4, 1),
        (4, 8),
        (8, 1),
        (8, 8),
        (32, 1),
        (32, 8),
    ]
    gains = {m["concurrency"]: m for m in s["derived"]["multicomm"]}
    for conc in (4, 8, 32):
        assert (gains[conc]["comms_low"], gains[conc]["comms_high"]) == (1, 8)
        assert 1.8 <= gains[conc]["aggregate_ratio"]["value"] <= 2.1
        assert gains[conc]["aggregate_ratio"]["tag"] == "derived"
    assert s["fitted"]["proxy_lane_us"]["tag"] == "derived"
    assert s["fitted"]["launch_us"]["tag"] == "assumed"

    # the user's runs replace the catalog's vLLM cells at the same scenario
    d = run_json(
        capsys, "evaluate", "--calibration", out, "--engine", "vllm", "--comms", "1", "--concurrency", "4"
    )
    assert d["arms"]["deepep"]["measured_cell"] == "your-c4-k1"
    assert d["arms"]["deepep"]["step_ms"]["value"] == pytest.approx(202.5, abs=0.1)
    # and extrapolate between comms values with the refitted lane constant
    base = run_json(capsys, "evaluate", "--engine", "vllm", "--comms", "2", "--concurrency", "4")
    cal = run_json(
        capsys, "evaluate", "--calibration", out, "--engine", "vllm", "--comms", "2", "--concurrency", "4"
    )
    assert cal["arms"]["deepep"]["step_ms"]["value"] != pytest.approx(
        base["arms"]["deepep"]["step_ms"]["value"]
    )
    assert cal["arms"]["deepep"]["breakdown_ms"]["proxy"]["tag"] == "derived"


def test_a_cell_carries_the_scenario_its_runs_ran() -> None:
    """One cell per DeepEP run, id `your-c<concurrency>-k<comms>`, role calibration, holding both
    legs' figures as measured (the ITLs above) and the cold start both exports show."""
    rs, cells, _ = trt_set()
    (cell,) = cells
    assert cell.id == rs.cell_id(4, 1) == f"{CELL_PREFIX}-c4-k1"
    assert cell.role == "calibration"
    assert cell.title == "your trtllm runs: DeepEP EP_NUM_COMMS=1, concurrency 4 with its dense twin"
    assert (cell.engine, cell.transport, cell.model, cell.instance, cell.nodes) == (
        "trtllm",
        "efa-proxy",
        "qwen3-30b-a3b-fp8",
        "p5en",
        2,
    )
    assert (cell.comms, cell.concurrency, cell.isl, cell.osl, cell.cuda_graphs) == (1, 4, 120, 128, False)
    assert cell.deepep.itl_ms == rs.deepep[(4, 1)].itl_ms.scalar
    assert cell.allgather is not None and cell.allgather.itl_ms == rs.dense[4].itl_ms.scalar
    assert cell.source.startswith("your DeepEP run AIPerf ") and "; your dense run AIPerf " in cell.source
    assert cell.cold_start.count("of cold start") == 2  # both legs waited


def test_a_deepep_run_without_a_dense_twin_is_a_cell_of_one_leg() -> None:
    rs = assemble([], [load_aiperf(vllm(1, 4))], Scenario())
    (cell,) = build_cells(rs)
    assert cell.allgather is None and "dense" not in cell.title and "your dense run" not in cell.source
    assert rs.pairs == {} and rs.multicomm == []  # one comms value: nothing to compare


def test_a_statistic_of_zero_is_left_out_of_the_cell() -> None:
    """A TTFT p50 of 0 is a valid export (only the means the A/B divides by must be positive) but
    no figure to replay: the cell leaves it empty rather than claim a 0 ms TTFT."""
    deepep = load_aiperf(TRT_DEEPEP)
    zero = replace(deepep, ttft_p50_ms=Q.measured(0.0, "ms", "test"))
    (cell,) = build_cells(assemble([], [zero], Scenario()))
    assert cell.deepep.ttft_p50_ms is None and cell.deepep.itl_ms == deepep.itl_ms.scalar


def test_one_dense_run_pairs_with_every_deepep_run_at_its_concurrency() -> None:
    """The dense c4 run is the twin of both DeepEP c4 runs (k1, and the shim run, whose name
    states no comms: assumed 8, with a warning); its own warning is given once."""
    dense = load_aiperf(TRT_DENSE)
    rs = assemble([dense], [load_aiperf(TRT_DEEPEP), load_aiperf(SHIM_C4)], Scenario())
    assert sorted(rs.pairs) == [(4, 1), (4, 8)]
    assert all(p.dense is rs.dense[4] for p in rs.pairs.values())
    assert [c.id for c in build_cells(rs)] == ["your-c4-k1", "your-c4-k8"]
    assert sum(w.startswith("dense run (") for w in rs.warnings) == 1
    assert any("deepep-shim_c4_isl120.json: EP_NUM_COMMS not stated" in w for w in rs.warnings)
    (gain,) = rs.multicomm  # k1 against k8 at concurrency 4, high over low
    assert (gain.comms_low, gain.comms_high) == (1, 8) and gain.itl_ratio.tag is Tag.DERIVED
    assert gain.itl_ratio.scalar == pytest.approx(
        rs.deepep[(4, 1)].itl_ms.scalar / rs.deepep[(4, 8)].itl_ms.scalar
    )


def test_a_dense_run_needs_a_deepep_run_at_its_concurrency() -> None:
    """A dense run at concurrency 4 beside DeepEP runs at 8 only (the engine named by --engine,
    the workload otherwise the same) has no twin: refused, naming both concurrencies."""
    dense = replace(load_aiperf(TRT_DENSE), engine="vllm")
    with pytest.raises(InputError) as info:
        assemble([dense], [load_aiperf(vllm(8, 8))], Scenario(engine="vllm"), {"engine"})
    assert info.value.field == "concurrency"
    assert_one_line(info.value, "8 is not allowed", "the dense run's concurrency 4")


# --------------------------------------------------------------------------------------------
# guard rails of assembling a set


def _edited(tmp_path: Path, src: Path, name: str, edit) -> Path:
    doc = json.loads(src.read_text())
    edit(doc)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


def test_mismatched_model_and_isl_are_errors(tmp_path: Path) -> None:
    def other_model(doc: dict) -> None:
        doc["input_config"]["models"]["items"][0]["name"] = "Qwen/Qwen3-235B-A22B"
        doc["input_config"].pop("tokenizer", None)

    def other_isl(doc: dict) -> None:
        doc["input_config"]["datasets"][0]["prompts"]["isl"]["mean"] = 2048.0

    bad_model = _edited(tmp_path, TRT_DEEPEP, TRT_DEEPEP.name, other_model)
    with pytest.raises(InputError, match="model"):
        assemble([load_aiperf(TRT_DENSE)], [load_aiperf(bad_model)], Scenario())
    # DeepEP-only sets are checked run against run
    bad_isl = _edited(tmp_path, vllm(8, 4), "vllm-0.24_x_deepep-epnc8_c8_isl2048.json", other_isl)
    with pytest.raises(InputError, match=r"the same ISL in every run.*ran 2048"):
        assemble([], [load_aiperf(vllm(1, 4)), load_aiperf(bad_isl)], Scenario())


def test_set_level_errors_and_warnings(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="one run per cell"):
        copy = tmp_path / f"vllm-0.24_{PREFIX}_deepep-epnc1_c4_isl120_again.json"
        shutil.copy(vllm(1, 4), copy)
        assemble([], [load_aiperf(vllm(1, 4)), load_aiperf(copy)], Scenario())
    anonymous = tmp_path / "run.json"
    shutil.copy(TRT_DEEPEP, anonymous)
    with pytest.raises(InputError, match="--engine"):
        assemble([], [load_aiperf(anonymous)], Scenario())
    rs = assemble([], [load_aiperf(anonymous)], Scenario(engine="trtllm"), {"engine"})
    assert any("EP_NUM_COMMS not stated" in w and "assumed 8" in w for w in rs.warnings)
    rs = assemble([], [load_aiperf(TRT_DEEPEP)], Scenario(comms=4), {"comms"})
    assert rs.scenario.comms == 4 and list(rs.deepep) == [(4, 4)]
    assert any("EP_NUM_COMMS=1; using --comms 4" in w for w in rs.warnings)
    with pytest.raises(InputError, match=r"--concurrency: 8 .*\[4\]"):
        assemble([], [load_aiperf(TRT_DEEPEP)], Scenario(concurrency=8), {"concurrency"})


def test_assemble_fills_concurrency_only_when_the_export_is_silent(tmp_path: Path) -> None:
    run = load_aiperf(TRT_DEEPEP)
    silent = replace(run, concurrency=None)
    rs = assemble([], [silent], Scenario(concurrency=4), {"concurrency"})
    assert list(rs.deepep) == [(4, 1)]
    with pytest.raises(InputError, match="concurrency"):
        assemble([], [silent], Scenario())


def test_mismatched_model_between_arms(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = json.loads(TRT_DEEPEP.read_text())
    doc["input_config"]["models"]["items"][0]["name"] = "Qwen/Qwen3-235B-A22B"
    doc["input_config"].pop("tokenizer", None)
    other = tmp_path / TRT_DEEPEP.name
    other.write_text(json.dumps(doc))
    out = tmp_path / "never.toml"
    code, _, err = run(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", other, "-o", out)
    assert code == 2 and not out.exists()
    assert "these mix 2 models (Qwen/Qwen3-235B-A22B: trtllm-0.21_" in err, err
    assert "Qwen/Qwen3-30B-A3B-FP8: trtllm-0.21_" in err, err


def test_a_folder_of_several_engines_is_refused_for_the_mixture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A folder holding three engines' DeepEP runs: the refusal names the mixture and the files
    of each engine, not a clash of two runs in one cell (the old message read EP_NUM_COMMS as a
    concurrency: "--deepep: 8 is not allowed ... 3 at concurrency 8 (..._c4_...)")."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for path in sorted(REAL.glob("*deepep*.json")):
        shutil.copyfile(path, folder / path.name)
    out = tmp_path / "never.toml"
    code, _, err = run(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", folder, "-o", out)
    assert code == 2 and err.count("\n") == 1 and not out.exists()
    assert "these mix 3 engines (sglang: sglang-0.5.11_" in err, err
    assert "; trtllm: trtllm-0.21_" in err and "; vllm: vllm-0.24_" in err, err
    assert "at concurrency 8" not in err
    # with the engine named, the runs left in one cell say what they differ in
    code, _, err = run(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", folder, "--engine", "trtllm", "-o", out
    )
    assert code == 2 and "3 runs sit at concurrency 4 with EP_NUM_COMMS=8" in err, err
    assert "they differ in engine sglang vs trtllm vs vllm" in err, err


def test_the_same_run_given_twice_is_refused() -> None:
    one = load_aiperf(TRT_DEEPEP)
    with pytest.raises(FileInputError, match="given twice; pass each run once") as info:
        assemble([], [one, one], Scenario())
    assert TRT_DEEPEP.name in info.value.message


@pytest.mark.parametrize(
    ("dense", "base", "field", "needle"),
    [
        (False, Scenario(), "--deepep", "give at least one DeepEP run"),
        (True, Scenario(alternative="tp"), "--alternative", "'tp' is not allowed; expected allgather"),
        (True, Scenario(calibration="p.toml"), "--calibration", "calibrate writes a profile, it reads none"),
    ],
)
def test_flags_a_calibration_cannot_honour_are_refused(
    dense: bool, base: Scenario, field: str, needle: str
) -> None:
    """Refused before any run is checked: one line naming the flag, the value and what is allowed."""
    deepep = [load_aiperf(TRT_DEEPEP)] if dense else []
    with pytest.raises(InputError, match=needle) as info:
        assemble([load_aiperf(TRT_DENSE)], deepep, base)
    assert info.value.field == field and "\n" not in info.value.message


def test_a_partial_node_is_warned_about() -> None:
    """Cells replay only at the instance's full 8 GPUs per node (p5en): at 4 the constants apply,
    the cells do not, and the warning says so."""
    rs = assemble([load_aiperf(TRT_DENSE)], [load_aiperf(TRT_DEEPEP)], Scenario(gpus_per_node=4))
    assert any(w.startswith("--gpus-per-node 4: measured cells are replayed only at") for w in rs.warnings)
