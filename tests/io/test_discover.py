"""Finding the runs (`io/discover.py`): `calibrate` takes folders as people have them: AIPerf
artifact folders, campaigns, our own names. One summary export per run is read, every other
file is listed with the reason it was not, and what the folders' names say fills what the
exports leave out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibrate.user_runs import TRT_DEEPEP, TRT_DENSE, TRT_DENSE_CSV, vllm
from cli_runner import run_cli
from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.io import discover as discover_module
from deepep_calc.io.discover import discover, skip_reason
from one_line import assert_one_line

AIPERF_FOLDER = "Qwen_Qwen3-30B-A3B-FP8-openai-chat-concurrency4"


def artifact_folder(root: Path, summary: Path, csv: Path | None = None) -> Path:
    """A folder laid out as AIPerf writes one run's artifacts."""
    folder = root / "artifacts" / AIPERF_FOLDER
    (folder / "logs").mkdir(parents=True)
    (folder / "profile_export_aiperf.json").write_bytes(summary.read_bytes())
    if csv is not None:
        (folder / "profile_export_aiperf.csv").write_bytes(csv.read_bytes())
    (folder / "profile_export.jsonl").write_text('{"metadata": {}, "metrics": {}}\n')
    (folder / "profile_export_raw.jsonl").write_text('{"request": {}}\n')
    (folder / "inputs.json").write_text('{"data": []}')
    (folder / "profile_export_aiperf_timeslices.json").write_text('{"timeslices": []}')
    (folder / "gpu_telemetry_export.jsonl").write_text("{}\n")
    (folder / "logs" / "aiperf.log").write_text("INFO done\n")
    (folder / ".DS_Store").write_bytes(b"\0")
    return folder


def test_an_aiperf_artifact_folder_reads_its_summary_and_says_what_it_skipped(tmp_path: Path) -> None:
    artifact_folder(tmp_path / "dense", TRT_DENSE, TRT_DENSE_CSV)
    artifact_folder(tmp_path / "deepep", TRT_DEEPEP)
    found = discover([tmp_path / "dense"], [tmp_path / "deepep"])
    assert [u.path.name for u in found.used] == ["profile_export_aiperf.json"] * 2
    assert [u.leg for u in found.used] == ["dense", "deepep"]
    reasons = {s.path.name: s.reason for s in found.skipped if s.leg == "dense"}
    assert set(reasons) == {
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "profile_export_raw.jsonl",
        "inputs.json",
        "profile_export_aiperf_timeslices.json",
        "gpu_telemetry_export.jsonl",
        "aiperf.log",
    }  # hidden files are not listed
    assert "CSV twin" in reasons["profile_export_aiperf.csv"]
    assert "per-request" in reasons["profile_export.jsonl"]
    assert "payloads" in reasons["inputs.json"]
    assert "time slice" in reasons["profile_export_aiperf_timeslices.json"]


def test_calibrate_on_artifact_folders_lists_files_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact_folder(tmp_path / "runs" / "dense", TRT_DENSE, TRT_DENSE_CSV)
    artifact_folder(tmp_path / "runs" / "deepep", TRT_DEEPEP)
    out = tmp_path / "mine.toml"
    code, stdout, err = run_cli(
        capsys,
        "calibrate",
        "--dense",
        tmp_path / "runs" / "dense",
        "--deepep",
        tmp_path / "runs" / "deepep",
        "--engine",
        "trtllm",
        "--comms",
        "1",
        "-o",
        out,
        "--json",
    )
    assert code == 0, err
    files = json.loads(stdout)["files"]
    assert [(f["arm"], f["concurrency"], f["format"]) for f in files["used"]] == [
        ("dense", 4, "json"),
        ("deepep", 4, "json"),
    ]
    assert len(files["skipped"]) == 7 + 6 and all(s["reason"] for s in files["skipped"])
    assert out.is_file()


def test_terminal_summary_names_used_and_skipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    artifact_folder(tmp_path / "d", TRT_DENSE, TRT_DENSE_CSV)
    artifact_folder(tmp_path / "x", TRT_DEEPEP)
    args = ["--dense", tmp_path / "d", "--deepep", tmp_path / "x", "--engine", "trtllm", "--comms", "1"]
    code, stdout, err = run_cli(capsys, "calibrate", *args, "-o", tmp_path / "p.toml")
    assert code == 0, err
    assert "Runs read (2)" in stdout and "Skipped (13)" in stdout
    assert "the request payloads AIPerf sent" in stdout
    assert max(len(line) for line in stdout.splitlines()) <= 80


def test_a_folder_of_exports_named_by_our_convention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case the issue reports: runs/dense/ and runs/deepep/ holding convention-named files."""
    (tmp_path / "dense").mkdir()
    (tmp_path / "deepep").mkdir()
    (tmp_path / "dense" / TRT_DENSE.name).write_bytes(TRT_DENSE.read_bytes())
    (tmp_path / "dense" / TRT_DENSE_CSV.name).write_bytes(TRT_DENSE_CSV.read_bytes())
    (tmp_path / "deepep" / TRT_DEEPEP.name).write_bytes(TRT_DEEPEP.read_bytes())
    (tmp_path / "deepep" / "notes.md").write_text("c4 run on Tuesday")
    code, stdout, err = run_cli(
        capsys, "calibrate", "--dense", tmp_path / "dense", "--deepep", tmp_path / "deepep", "-o",
        tmp_path / "p.toml", "--json",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["scenario"]["engine"] == "trtllm" and summary["scenario"]["comms"] == 1  # from the names
    used = [Path(f["path"]).name for f in summary["files"]["used"]]
    assert used == [TRT_DENSE.name, TRT_DEEPEP.name]
    skipped = {Path(s["path"]).name: s["reason"] for s in summary["files"]["skipped"]}
    assert set(skipped) == {TRT_DENSE_CSV.name, "notes.md"}


def test_a_campaign_of_nested_folders_takes_engine_comms_and_concurrency_from_folder_names(
    tmp_path: Path,
) -> None:
    for comms in (1, 8):
        for conc in (4, 8, 32):
            folder = tmp_path / "campaign" / "vllm" / f"deepep-epnc{comms}" / f"c{conc}"
            folder.mkdir(parents=True)
            (folder / "profile_export_aiperf.json").write_bytes(vllm(comms, conc).read_bytes())
    found = discover([], [tmp_path / "campaign"])
    placed = [(u.run.engine, u.run.comms, u.run.concurrency) for u in found.used]
    assert placed == [("vllm", k, c) for k in (1, 8) for c in (4, 8, 32)]  # c4 before c32
    assert found.skipped == []


def test_csv_only_run_takes_concurrency_from_aiperfs_folder_name(tmp_path: Path) -> None:
    folder = tmp_path / "trtllm_dense" / AIPERF_FOLDER
    folder.mkdir(parents=True)
    (folder / "profile_export_aiperf.csv").write_bytes(TRT_DENSE_CSV.read_bytes())
    (found,) = discover([tmp_path / "trtllm_dense"], [TRT_DEEPEP]).used[:1]
    assert found.run.export_format == "csv"
    assert found.run.concurrency == 4 and found.run.engine == "trtllm" and found.run.leg == "dense"


def test_one_mixed_folder_under_both_flags_reads_each_run_once(tmp_path: Path) -> None:
    for src in (TRT_DENSE, TRT_DEEPEP):
        (tmp_path / src.name).write_bytes(src.read_bytes())
    found = discover([tmp_path], [tmp_path])
    assert [(u.leg, u.path.name) for u in found.used] == [
        ("dense", TRT_DENSE.name),
        ("deepep", TRT_DEEPEP.name),
    ]
    assert {s.reason for s in found.skipped} == {
        "named as a DeepEP run; not read under --dense",
        "named as a dense run; not read under --deepep",
    }


def test_a_json_that_is_not_an_export_is_skipped_with_its_problem(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_bytes(TRT_DEEPEP.read_bytes())
    (tmp_path / "settings.json").write_text('{"lr": 0.1}')
    found = discover([], [tmp_path])
    assert [u.path.name for u in found.used] == ["run.json"]
    (skipped,) = found.skipped
    assert skipped.path.name == "settings.json" and "no AIPerf metric blocks" in skipped.reason


def test_a_broken_summary_is_an_error_not_a_skip(tmp_path: Path) -> None:
    """Dropping a run the user meant would change the fit silently."""
    folder = tmp_path / "c4"
    folder.mkdir()
    (folder / "profile_export_aiperf.json").write_text(TRT_DEEPEP.read_text()[:500])
    (tmp_path / TRT_DEEPEP.name).write_bytes(TRT_DEEPEP.read_bytes())
    with pytest.raises(FileInputError, match="truncated JSON") as info:
        discover([], [tmp_path])
    assert "profile_export_aiperf.json" in info.value.message


def test_a_folder_without_runs_says_what_it_passed_over(tmp_path: Path) -> None:
    (tmp_path / "profile_export.jsonl").write_text("{}\n")
    (tmp_path / "inputs.json").write_text("{}")
    with pytest.raises(FileInputError, match="no AIPerf export in this folder") as info:
        discover([], [tmp_path])
    assert "profile_export.jsonl: AIPerf per-request records" in info.value.message
    assert "inputs.json" in info.value.message and "\n" not in info.value.message


def test_naming_a_records_file_reads_the_summary_beside_it(tmp_path: Path) -> None:
    (tmp_path / "profile_export_aiperf.json").write_bytes(TRT_DEEPEP.read_bytes())
    (tmp_path / "profile_export.jsonl").write_text("{}\n")
    (used,) = discover([], [tmp_path / "profile_export.jsonl"]).used
    assert used.path.name == "profile_export_aiperf.json" and "beside it" in used.note
    lonely = tmp_path / "alone"
    lonely.mkdir()
    (lonely / "inputs.json").write_text("{}")
    with pytest.raises(FileInputError, match=r"pass the run's profile_export_aiperf\.json"):
        discover([], [lonely / "inputs.json"])


def test_walk_does_not_follow_folder_symlinks(tmp_path: Path) -> None:
    (tmp_path / "c4").mkdir()
    (tmp_path / "c4" / "profile_export_aiperf.json").write_bytes(TRT_DEEPEP.read_bytes())
    (tmp_path / "c4" / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert len(discover([], [tmp_path]).used) == 1


@pytest.mark.parametrize(
    ("name", "skipped"),
    [
        ("profile_export_aiperf.json", False),
        ("profile_export_aiperf.csv", False),
        ("vllm-0.24_x_deepep-epnc8_c4_isl120.json", False),
        ("profile_export.jsonl", True),
        ("profile_export.parquet", True),
        ("profile_export_aiperf_aggregate.json", True),
        ("server_metrics_export.json", True),
        ("plot.png", True),
        ("run.yaml", True),
    ],
)
def test_names_that_are_never_summaries(name: str, skipped: bool) -> None:
    assert (skip_reason(Path(name)) is not None) is skipped


def test_the_discovery_as_json_keeps_the_key_arm_and_gives_comms_to_deepep_runs_only(
    tmp_path: Path,
) -> None:
    """`calibrate --json` lists the files under "arm" (the key keeps its name for the leg); a run
    given as dense has no comms even when its name states one; a note says when a named file was
    read through the summary beside it, and only then."""
    (tmp_path / "profile_export_aiperf.json").write_bytes(TRT_DEEPEP.read_bytes())
    (tmp_path / "profile_export.jsonl").write_text("{}\n")
    found = discover([vllm(1, 4)], [vllm(8, 4), tmp_path / "profile_export.jsonl"])
    assert [r.path for r in found.runs("dense")] == [vllm(1, 4)]
    doc = found.to_json()
    assert doc["skipped"] == []
    dense, deepep, beside = doc["used"]
    assert dense == {
        "path": str(vllm(1, 4)),
        "arm": "dense",
        "format": "json",
        "concurrency": 4,
        "comms": None,
    }
    assert deepep == {
        "path": str(vllm(8, 4)),
        "arm": "deepep",
        "format": "json",
        "concurrency": 4,
        "comms": 8,
    }
    assert beside["path"] == str(tmp_path / "profile_export_aiperf.json")
    assert beside["note"] == (
        "profile_export.jsonl is AIPerf per-request records; read profile_export_aiperf.json beside it"
    )


def test_no_deepep_run_is_refused() -> None:
    with pytest.raises(InputError) as info:
        discover([TRT_DENSE], [])
    assert_one_line(info.value, "--deepep", "at least one DeepEP run")


def test_a_folder_with_too_many_entries_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_ENTRIES files and folders the wrong folder was given: refused, not walked on."""
    monkeypatch.setattr(discover_module, "MAX_ENTRIES", 3)
    for n in range(4):
        (tmp_path / f"notes{n}.txt").write_text("x")
    with pytest.raises(FileInputError) as info:
        discover([], [tmp_path])
    assert_one_line(info.value, "holds more than 3 files and folders; point at the folder of runs")


def test_folders_deeper_than_max_depth_are_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At MAX_DEPTH 1, a run one folder down is found and one two folders down is not."""
    monkeypatch.setattr(discover_module, "MAX_DEPTH", 1)
    near, far = tmp_path / "c4", tmp_path / "a" / "c8"
    near.mkdir()
    far.mkdir(parents=True)
    (near / "profile_export_aiperf.json").write_bytes(vllm(8, 4).read_bytes())
    (far / "profile_export_aiperf.json").write_bytes(vllm(8, 8).read_bytes())
    assert [u.run.concurrency for u in discover([], [tmp_path]).used] == [4]
