"""`deepep-calc calibrate` as a command (`cli/commands/calibrate.py`): the output is checked
before anything is read, never an input (a file named on the command line or an export found
inside a folder), a kernel log's settings only with a log; `-o -` prints the profile alone; the
scenario fields the user typed are told from the ones the exports may supply. (The fit, the
summary and what a profile changes are tests/calibrate/'s: `test_fit.py`, `test_summary.py`,
`test_runs.py`.)"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import click
import pytest

from cli_runner import run_cli
from deepep_calc.cli.commands import calibrate
from paths import REPO, TESTS

REAL = TESTS / "fixtures" / "aiperf"
DENSE = REAL / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_dense-allgather_c4_isl120.json"
DEEPEP = REAL / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_deepep-epnc1_c4_isl120.json"
SAMPLE_LOG = REPO / "src" / "deepep_calc" / "io" / "samples" / "deepep_ll_efa_proxy_p5en_ep16.log"


def test_register_adds_the_calibrate_command() -> None:
    group = click.Group()
    calibrate.register(group)
    assert group.commands == {"calibrate": calibrate.calibrate_cmd}


def refused(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    """The one error line of a refused calibrate run."""
    code, out, err = run_cli(capsys, "calibrate", "--dense", DENSE, "--deepep", DEEPEP, *args)
    assert (code, out) == (2, ""), err
    (line,) = err.strip().splitlines()
    assert line.startswith("deepep-calc: error: ")
    return line.removeprefix("deepep-calc: error: ")


def test_the_profile_to_stdout_with_json_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(capsys, "-o", "-", "--json") == "-o - prints the profile; drop --json or name a file"


def test_an_input_is_never_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    before = DEEPEP.read_bytes()
    message = refused(capsys, "-o", DEEPEP, "--force")  # not even with --force
    assert message.startswith(f"{DEEPEP}: is also an input of this command (--deepep {DEEPEP})")
    assert DEEPEP.read_bytes() == before


def test_an_export_found_inside_a_folder_is_never_the_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The folder's exports are known only once it is read: the target is checked against them
    again before the profile is written."""
    shutil.copy(DEEPEP, tmp_path)
    inside = tmp_path / DEEPEP.name
    code, out, err = run_cli(
        capsys, "calibrate", "--dense", DENSE, "--deepep", tmp_path, "-o", inside, "--force"
    )
    assert (code, out) == (2, "")
    assert f"{inside}: is also an input of this command (--deepep {inside})" in err
    assert inside.read_bytes() == DEEPEP.read_bytes()


@pytest.mark.parametrize("flag", ["--kernel-comms", "--kernel-qps"])
def test_kernel_settings_without_a_kernel_log_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    target = tmp_path / "p.toml"
    assert (
        refused(capsys, "-o", target, flag, "4")
        == "--kernel-comms / --kernel-qps describe a --kernel-log; none was given"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--kernel-comms", "0", "a whole number from 1 to 64"),
        ("--kernel-qps", "1025", "a whole number from 1 to 1024"),
    ],
)
def test_kernel_settings_out_of_range_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, allowed: str
) -> None:
    target = tmp_path / "p.toml"
    message = refused(capsys, "-o", target, "--kernel-log", SAMPLE_LOG, flag, value)
    assert message == f"{flag}: {value} is not allowed; expected {allowed}"
    assert not target.exists()


def test_the_profile_on_stdout_is_the_profile_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """No summary beside it: stdout parses as the TOML profile, the warnings go to stderr."""
    code, out, err = run_cli(capsys, "calibrate", "--dense", DENSE, "--deepep", DEEPEP, "-o", "-")
    assert code == 0, err
    profile = tomllib.loads(out)
    assert profile["kind"] == "deepep-calc calibration profile"
    assert (profile["scenario"]["model"], profile["scenario"]["engine"]) == ("qwen3-30b-a3b-fp8", "trtllm")
    warnings = err.strip().splitlines()
    assert len(warnings) == len(profile["warnings"]) == 2  # both runs had a cold start
    assert all(w.startswith("deepep-calc: warning: ") for w in warnings)


def test_typed_fields_are_the_ones_given_on_the_command_line() -> None:
    """--model and --concurrency typed; engine, ISL, OSL and EP_NUM_COMMS left to the exports
    (--nodes is typed too, but the exports never say it)."""
    ctx = calibrate.calibrate_cmd.make_context(
        "calibrate",
        ["--deepep", "x", "-o", "y", "--model", "deepseek-v3", "--concurrency", "4", "--nodes", "4"],
    )
    assert calibrate._typed_fields(ctx) == {"model", "concurrency"}
    ctx = calibrate.calibrate_cmd.make_context("calibrate", ["--deepep", "x", "-o", "y"])
    assert calibrate._typed_fields(ctx) == set()
