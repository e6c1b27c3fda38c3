"""Issue 10 item 10: imports that would lie about provenance are refused.

* an AIPerf export whose ITL unit contradicts its own per-user throughput;
* a DeepEP kernel log that states another transport than the one it would calibrate;
* a calibration profile whose [scenario] no CLI would accept;
* a profile whose recorded input fingerprints no longer match the files found again.
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
from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.transports import get_transport
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.kernel_log import check_transport, load_kernel_log
from deepep_calc.io.profile import load_profile
from paths import REPO

REPO = REPO
REAL = REPO / "tests" / "fixtures" / "aiperf"
SAMPLE_LOG = REPO / "src" / "deepep_calc" / "io" / "samples" / "deepep_ll_efa_proxy_p5en_ep16.log"
PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
DENSE_NAME = f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
DEEPEP_NAME = f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"


def _export(tmp_path: Path, name: str, **itl: Any) -> Path:
    doc = json.loads((REAL / name).read_text("utf-8"))
    doc["inter_token_latency"].update(itl)
    path = tmp_path / name
    path.write_text(json.dumps(doc), "utf-8")
    return path


# AIPerf: ITL against per-user throughput ---------------------------------------------------------


def test_itl_in_seconds_that_is_really_milliseconds_is_refused(tmp_path: Path) -> None:
    path = _export(tmp_path, DEEPEP_NAME, unit="s")
    with pytest.raises(FileInputError) as info:
        load_aiperf(path)
    msg = info.value.message
    assert info.value.field == "inter_token_latency"
    assert "51.9 ms per token" in msg and "51,899.9 ms" in msg and "reads right in 'ms'" in msg


def test_itl_in_seconds_that_is_really_seconds_is_converted(tmp_path: Path) -> None:
    doc = json.loads((REAL / DEEPEP_NAME).read_text("utf-8"))
    block = doc["inter_token_latency"]
    for stat in ("avg", "p50", "std", "min", "max", "p1", "p5", "p10", "p25", "p75", "p90", "p95", "p99"):
        if isinstance(block.get(stat), int | float):
            block[stat] = block[stat] / 1000.0
    block["unit"] = "s"
    path = tmp_path / DEEPEP_NAME
    path.write_text(json.dumps(doc), "utf-8")
    run = load_aiperf(path)
    assert run.itl_ms is not None and run.itl_ms.scalar == pytest.approx(51.8999, rel=1e-4)


def test_the_cli_refuses_the_mislabelled_export_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = _export(tmp_path, DEEPEP_NAME, unit="s")
    code, out, err = run_cli(
        capsys, "calibrate", "--dense", REAL / DENSE_NAME, "--deepep", bad, "-o", tmp_path / "p.toml"
    )
    assert code == 2 and not out and err.count("\n") == 1 and "inter_token_latency" in err
    assert not (tmp_path / "p.toml").exists()


# Kernel logs: the transport they state ------------------------------------------------------------


def test_a_proxy_log_cannot_calibrate_efa_gda(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    code, _, err = run_cli(
        capsys,
        "calibrate",
        "--dense",
        REAL / DENSE_NAME,
        "--deepep",
        REAL / DEEPEP_NAME,
        "--kernel-log",
        SAMPLE_LOG,
        "--transport",
        "efa-gda",
        "-o",
        out,
    )
    assert code == 2 and "NCCL_GIN_TYPE=2, the setting of efa-proxy" in err and "efa-gda" in err
    assert not out.exists()


def test_a_log_that_names_its_transport_is_held_to_it(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    text = SAMPLE_LOG.read_text().replace("# Synthesised", "# transport: efa-uccl. Synthesised", 1)
    log.write_text(re.sub(r"NCCL-GIN type 2", "its own path", text))
    parsed = load_kernel_log(log)
    assert parsed.stated_transport == ("efa-uccl", 1)
    check_transport(parsed, get_transport("efa-uccl"))
    with pytest.raises(
        FileInputError, match=r"line 1 says the run used transport efa-uccl.*--transport efa-uccl"
    ):
        check_transport(parsed, get_transport("efa-proxy"))


def test_a_log_that_states_nothing_is_accepted_for_any_transport(tmp_path: Path) -> None:
    log = tmp_path / "plain.log"
    log.write_text(
        "\n".join(line for line in SAMPLE_LOG.read_text().splitlines() if not line.startswith("#"))
    )
    parsed = load_kernel_log(log)
    assert parsed.stated_transport is None and parsed.stated_env == {}
    for name in ("efa-proxy", "efa-gda", "ib-ibgda"):
        check_transport(parsed, get_transport(name))


def test_the_sample_log_still_calibrates_efa_proxy() -> None:
    check_transport(load_kernel_log(SAMPLE_LOG), get_transport("efa-proxy"))


# Profiles: their scenario and their inputs ------------------------------------------------------


@pytest.fixture()
def profile(tmp_path: Path) -> Path:
    inputs = tmp_path / "runs"
    inputs.mkdir()
    for name in (DENSE_NAME, DEEPEP_NAME):
        shutil.copy(REAL / name, inputs / name)
    out = tmp_path / "p.toml"
    cli.main(
        [
            "calibrate",
            "--dense",
            str(inputs / DENSE_NAME),
            "--deepep",
            str(inputs / DEEPEP_NAME),
            "-o",
            str(out),
            "--json",
        ]
    )
    return out


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("nodes", "-5", "scenario.nodes = -5 is not allowed; expected a whole number greater than 0"),
        ("concurrency", "0", "scenario.concurrency = 0"),
        ("isl", "100000000", "scenario.isl = 100000000"),
        ("transport", '"warp-drive"', "scenario.transport = 'warp-drive'"),
        ("instance", '"p9"', "scenario.instance = 'p9'"),
    ],
)
def test_a_profile_scenario_with_nonsense_is_refused(
    profile: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, needle: str
) -> None:
    text = profile.read_text()
    edited = re.sub(rf"(?m)^({key} = ).*$", rf"\g<1>{value}", text, count=1)
    assert edited != text
    profile.write_text(edited)
    with pytest.raises(FileInputError) as info:
        load_profile(profile)
    assert needle in info.value.message and "\n" not in info.value.message
    code, _, err = run_cli(capsys, "evaluate", "--calibration", profile)
    assert code == 2 and needle in err


def test_a_changed_input_file_is_caught_by_its_fingerprint(profile: Path) -> None:
    load_profile(profile)  # the files are as recorded
    dense = profile.parent / "runs" / DENSE_NAME
    original = dense.read_text("utf-8")
    doc = json.loads(original)
    doc["output_token_throughput"]["avg"] *= 1.5  # a re-run into the same file name
    dense.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(FileInputError) as info:
        load_profile(profile)
    assert "dense input" in info.value.message and "has changed since calibration" in info.value.message
    dense.write_text(original, "utf-8")
    load_profile(profile)  # restored: accepted again


def test_a_profile_without_its_inputs_still_loads(profile: Path) -> None:
    shutil.rmtree(profile.parent / "runs")
    assert load_profile(profile).inputs  # profiles travel without the files they rest on
