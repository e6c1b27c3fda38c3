"""`deepep-calc calibrate` end to end, and what `--calibration` changes in `evaluate` and `kernel`.

Runs the real entry point (`cli.main`, the path that turns errors into one line and exit 2) in
process; the installed console script's own runs are tests/e2e/test_installed_program.py's.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc import cli
from paths import REPO, TESTS

REPO = REPO
REAL = TESTS / "fixtures" / "aiperf"
EXTRA = TESTS / "fixtures" / "aiperf_extra"
SAMPLE_LOG = REPO / "src" / "deepep_calc" / "io" / "samples" / "deepep_ll_efa_proxy_p5en_ep16.log"
PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
TRT_DENSE = REAL / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
TRT_DEEPEP = REAL / f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"
PAIR_SCENARIO = [
    "--model",
    "qwen3-30b-a3b-fp8",
    "--comms",
    "1",
    "--concurrency",
    "4",
    "--isl",
    "120",
    "--osl",
    "128",
]


def vllm(comms: int, conc: int) -> Path:
    return REAL / f"vllm-0.24_{PREFIX}_deepep-epnc{comms}_c{conc}_isl120.json"


run = run_cli


def run_json(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def trt_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trt") / "trt.toml"
    cli.main(["calibrate", "--dense", str(TRT_DENSE), "--deepep", str(TRT_DEEPEP), "-o", str(out), "--json"])
    return out


# --------------------------------------------------------------------------------------------
# the TRT-LLM conc-4 pair


def test_trt_pair_summary_figures_and_tags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    s = run_json(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", out)
    assert out.is_file()
    rows = {row["arm"]: row for row in s["measured"]}
    dense, deepep = rows["dense"], rows["DeepEP"]
    assert round(dense["per_user_tok_s"]["value"], 2) == 28.06
    assert round(deepep["per_user_tok_s"]["value"], 2) == 19.27
    assert abs(dense["itl_ms"]["value"] - 35.64) < 0.01
    assert round(deepep["itl_ms"]["value"], 2) == 51.90
    for row in (dense, deepep):
        for metric in ("per_user_tok_s", "itl_ms", "ttft_p50_ms", "aggregate_tok_s"):
            assert row[metric]["tag"] == "measured"
    assert "fae6e9f1f9fc" in dense["itl_ms"]["source"] and TRT_DENSE.name in dense["itl_ms"]["source"]
    (pair,) = s["derived"]["pairs"]
    assert abs(pair["tax_ms"]["value"] - 16.3) < 0.05 and pair["tax_ms"]["tag"] == "derived"
    assert 0.0 < pair["tax_spread_ms"]["value"] < 0.2
    assert {pair[k]["tag"] for k in ("per_user_ratio", "aggregate_ratio", "ttft_ratio")} == {"derived"}
    fitted = s["fitted"]
    assert fitted["launch_us"]["tag"] == "derived"
    assert fitted["proxy_fixed_us"]["tag"] == "derived"
    assert fitted["proxy_lane_us"]["tag"] == "assumed"
    assert fitted["proxy_lane_us"]["value"] == fitted["proxy_lane_us"]["builtin"]
    assert {i["role"] for i in s["inputs"]} == {"dense", "deepep"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", i["sha256"]) for i in s["inputs"])
    # the one doubt: both runs' first waves waited for a cold start, left out at steady state
    assert len(s["warnings"]) == 2 and all("cold start" in w for w in s["warnings"])
    steady = pair["steady_aggregate_ratio"]
    assert steady["tag"] == "derived" and abs(steady["value"] - 0.675) < 0.001
    assert steady["value"] > pair["aggregate_ratio"]["value"]


def test_trt_pair_table_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", tmp_path / "p.toml"
    )
    assert code == 0, err
    for needle in (
        "Measured: your runs",
        "Fitted constants",
        "Residuals",
        "19.27 tok/s",
        "51.90 ms",
        "16.27 ms",
    ):
        assert needle in out
    assert re.search(r"proxy_lane_us .* ○", out)  # assumed
    assert re.search(r"DeepEP c4 k1 .* ●", out)  # measured
    assert "● measured  ◐ derived  ○ assumed" in out


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


@pytest.mark.parametrize(
    "where", [["--comms", "1", "--concurrency", "24"], ["--comms", "8", "--concurrency", "8"]]
)
def test_evaluate_elsewhere_moves_in_the_direction_of_the_refit(
    capsys: pytest.CaptureFixture[str], trt_profile: Path, where: list[str]
) -> None:
    fitted = run_json(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", trt_profile, "--force"
    )
    launch = fitted["fitted"]["launch_us"]
    delta_launch = launch["value"] - launch["builtin"]
    assert delta_launch < 0  # the user's dense step is shorter than the reference's

    base = run_json(capsys, "evaluate", *where)
    cal = run_json(capsys, "evaluate", "--calibration", trt_profile, *where)
    for arm in ("deepep", "allgather"):
        assert base["arms"][arm]["measured_cell"] is None and cal["arms"][arm]["measured_cell"] is None
    # the dense step is the eager CPU path: launch x kernels (48 x (6 + 9) + 3 = 723 for
    # Qwen3-30B-A3B) + the host cost per step, so it moves by exactly the launch change x 723
    change_ms = cal["arms"]["allgather"]["step_ms"]["value"] - base["arms"]["allgather"]["step_ms"]["value"]
    assert change_ms < 0
    assert change_ms == pytest.approx(delta_launch * 723 / 1000, rel=1e-6)
    assert (
        cal["arms"]["allgather"]["per_user_tok_s"]["value"]
        > base["arms"]["allgather"]["per_user_tok_s"]["value"]
    )
    assert "trt.toml" in cal["arms"]["allgather"]["breakdown_ms"]["engine"]["source"]
    # the DeepEP step carries the proxied host cost refitted to the user's run (EP_NUM_COMMS=1):
    # the step is flat in concurrency, so at EP_NUM_COMMS=1 it is the user's 51.90 ms anywhere
    if where[1] == "1":
        assert cal["arms"]["deepep"]["step_ms"]["value"] == pytest.approx(51.90, abs=0.01)
        assert "trt.toml" in cal["arms"]["deepep"]["breakdown_ms"]["proxy"]["source"]


def test_evaluate_refuses_a_profile_of_another_engine(
    capsys: pytest.CaptureFixture[str], trt_profile: Path
) -> None:
    code, out, err = run(capsys, "evaluate", "--calibration", trt_profile, "--engine", "vllm")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "--calibration" in err and "fitted on trtllm runs, not vllm" in err


# --------------------------------------------------------------------------------------------
# the vLLM multi-comm runs (DeepEP only)


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


# --------------------------------------------------------------------------------------------
# guard rails


MALFORMED = [
    (["--dense", EXTRA / "non_streaming.json", "--deepep", TRT_DEEPEP], "no inter-token latency"),
    (["--dense", EXTRA / "empty.json", "--deepep", TRT_DEEPEP], "the file is empty"),
    (["--dense", EXTRA / "truncated.json", "--deepep", TRT_DEEPEP], "truncated JSON"),
    (["--dense", EXTRA / "non_utf8.json", "--deepep", TRT_DEEPEP], "not UTF-8"),
    (["--dense", EXTRA / "json_array.json", "--deepep", TRT_DEEPEP], "top level is an array"),
    (["--dense", EXTRA / "no_metrics.json", "--deepep", TRT_DEEPEP], "no AIPerf metric blocks"),
    (["--dense", EXTRA / "empty_dir", "--deepep", TRT_DEEPEP], "no AIPerf export in this folder"),
    (["--dense", EXTRA / "missing.json", "--deepep", TRT_DEEPEP], "no such file"),
    (
        ["--dense", TRT_DENSE, "--deepep", vllm(1, 8)],
        "these mix 2 engines (trtllm: trtllm-0.21_",
    ),
    (
        ["--dense", TRT_DENSE, "--deepep", vllm(1, 8), "--engine", "vllm"],
        "concurrency: 8 is not allowed; expected the dense run's",
    ),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--osl", "256"], "--osl: 256 is not allowed"),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--alternative", "tp"], "--alternative: 'tp'"),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--deepep", TRT_DEEPEP], "given twice"),
    (["--dense", TRT_DENSE], "Missing option '--deepep'"),
    (
        ["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-log", EXTRA / "empty.json"],
        "the file is empty",
    ),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-log", TRT_DENSE], "no DeepEP benchmark lines"),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-qps", "4"], "describe a --kernel-log"),
    (["--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--instance", "p9"], "--instance"),
]


@pytest.mark.parametrize(("args", "needle"), MALFORMED, ids=lambda v: v if isinstance(v, str) else None)
def test_malformed_input_is_one_line_exit_2_and_no_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[Any], needle: str
) -> None:
    out = tmp_path / "never.toml"
    code, stdout, err = run(capsys, "calibrate", *args, "-o", out)
    assert code == 2
    assert stdout == ""
    assert err.startswith("deepep-calc: error: ") and err.count("\n") == 1
    assert needle in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file either


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


def test_existing_profile_needs_force(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    out.write_text("keep me")
    code, _, err = run(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", out)
    assert code == 2 and "already exists; pass --force" in err
    assert out.read_text() == "keep me"
    code, _, err = run(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", out, "--force"
    )
    assert code == 0, err
    assert out.read_text().startswith("# deepep-calc calibration profile")


@pytest.mark.parametrize(
    ("dense", "needle"),
    [
        ("cancelled_run.json", "was cancelled"),
        ("error_requests.json", "3 of 40 requests failed"),
        ("unknown_schema.json", "unknown schema_version '9.9'"),
        ("short_osl.json", "measured output length 96.0 differs"),
    ],
)
def test_suspect_runs_import_with_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, dense: str, needle: str
) -> None:
    out = tmp_path / "p.toml"
    code, stdout, err = run(
        capsys, "calibrate", "--dense", EXTRA / dense, "--deepep", TRT_DEEPEP, "-o", out, "--json"
    )
    assert code == 0, err
    s = json.loads(stdout)
    assert any(needle in w for w in s["warnings"])
    assert any(line.startswith("deepep-calc: warning: ") and needle in line for line in err.splitlines())
    assert out.is_file()
    code, stdout, _ = run(
        capsys, "calibrate", "--dense", EXTRA / dense, "--deepep", TRT_DEEPEP, "-o", out, "--force"
    )
    assert code == 0 and "Warnings" in stdout and needle in " ".join(stdout.split())


def test_broken_profile_is_refused_by_evaluate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    code, _, err = run(capsys, "evaluate", "--calibration", bad)
    assert code == 2 and "bad.toml: not a TOML file" in err and err.count("\n") == 1


# --------------------------------------------------------------------------------------------
# kernel log


def test_kernel_log_calibration_changes_kernel_and_evaluate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = re.sub(
        r"avg_t=([0-9.]+)", lambda m: f"avg_t={float(m.group(1)) * 1.5:.2f}", SAMPLE_LOG.read_text()
    )
    log = tmp_path / "my_cluster.log"
    log.write_text(text)
    out = tmp_path / "k.toml"
    s = run_json(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-log", log, "-o", out
    )
    k = s["kernel"]
    assert (k["transport"], k["ep"], k["tokens"], k["comms"], k["qps"]) == ("efa-proxy", 16, 128, 8, 6)
    assert k["dispatch_p50_us"]["tag"] == "measured" and k["dispatch_beta_us"]["tag"] == "derived"
    assert k["dispatch_beta_us"]["value"] > k["dispatch_beta_us"]["builtin"]
    assert any(i["role"] == "kernel-log" and i["path"].endswith("my_cluster.log") for i in s["inputs"])

    # at the log's shape the kernel command returns the log's medians, measured
    at_log = run_json(capsys, "kernel", "--max-qps", "6", "--calibration", out)
    assert (
        at_log["dispatch_us"]["value"]
        == k["dispatch_p50_us"]["value"]
        == pytest.approx(185.4 * 1.5, abs=0.01)
    )
    assert at_log["combine_us"]["value"] == pytest.approx(258.2 * 1.5, abs=0.01)
    assert at_log["dispatch_us"]["tag"] == "measured" and "my_cluster.log" in at_log["dispatch_us"]["source"]
    # elsewhere the refitted cost per message scales the issue pipe: at 64 tokens (issue-bound
    # on both), dispatch minus its local part grows by the ratio of the betas
    from deepep_calc.fit.build import built_in_table

    alpha = built_in_table().nvlink_fit("deepep-v2").alpha_us.scalar / 2
    plain = run_json(capsys, "kernel", "--tokens", "64", "--max-qps", "6")
    cal = run_json(capsys, "kernel", "--tokens", "64", "--max-qps", "6", "--calibration", out)
    ratio = k["dispatch_beta_us"]["value"] / k["dispatch_beta_us"]["builtin"]
    assert cal["dispatch_us"]["value"] - alpha == pytest.approx(
        (plain["dispatch_us"]["value"] - alpha) * ratio
    )
    # another transport is untouched
    gda = run_json(capsys, "kernel", "--transport", "efa-gda", "--tokens", "64")
    gda_cal = run_json(capsys, "kernel", "--transport", "efa-gda", "--tokens", "64", "--calibration", out)
    assert gda_cal == gda

    # evaluate: the kernel part of the DeepEP step grows with the user's slower fabric
    base = run_json(capsys, "evaluate", "--comms", "8", "--concurrency", "8")
    with_log = run_json(capsys, "evaluate", "--comms", "8", "--concurrency", "8", "--calibration", out)
    b, c = base["arms"]["deepep"]["breakdown_ms"], with_log["arms"]["deepep"]["breakdown_ms"]
    assert c["moe_comm"]["value"] > b["moe_comm"]["value"]
    replay = run_json(capsys, "evaluate", "--calibration", out, *PAIR_SCENARIO)
    assert round(replay["arms"]["deepep"]["step_ms"]["value"], 2) == 51.90


def test_kernel_log_without_shape_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "noshape.log"
    log.write_text(
        "\n".join(line for line in SAMPLE_LOG.read_text().splitlines() if "num_tokens" not in line)
    )
    out = tmp_path / "never.toml"
    code, _, err = run(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-log", log, "-o", out
    )
    assert code == 2 and "noshape.log: the log does not state num_tokens" in err and not out.exists()


# --------------------------------------------------------------------------------------------
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
