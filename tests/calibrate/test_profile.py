"""Writing a calibration profile (`calibrate/profile.py`): the files it rests on, in order and
fingerprinted; the profile built from the runs and the fits; its text checked by the reader's own
rules in memory (`serialise`), so that a profile is written only once everything is checked, and
never half of one; the engine it was fitted on held when `evaluate` uses it.

Reading a profile back and its one-line refusals are tests/io/test_profile.py's.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.calibrate import profile as profile_module
from deepep_calc.calibrate.profile import build_profile, input_files, serialise, to_toml
from deepep_calc.fit.build import built_in_table
from deepep_calc.fit.profile_records import KIND, SCHEMA_VERSION
from deepep_calc.io.kernel_log import SAMPLE_LOG
from deepep_calc.io.profile import load_profile, write_text_atomic
from deepep_calc.question.scenario import Scenario, resolve

from .user_runs import EXTRA, TRT_DEEPEP, TRT_DENSE, records, run, trt_set, vllm

# --------------------------------------------------------------------------------------------
# the profile's inputs and its text


def test_the_inputs_are_the_dense_runs_then_the_deepep_runs_then_the_kernel_log() -> None:
    rs, _, _ = trt_set()
    assert input_files(rs, None) == [TRT_DENSE, TRT_DEEPEP]
    assert input_files(rs, SAMPLE_LOG) == [TRT_DENSE, TRT_DEEPEP, SAMPLE_LOG]


def test_each_input_is_recorded_with_its_fingerprint_and_what_its_export_states() -> None:
    """sha256 and size as hashlib and the file system give them; the DeepEP run keeps its comms,
    the dense run has none; a kernel log is recorded by role, path and fingerprint alone."""
    rs, _, _ = trt_set()
    dense, deepep, log = records(rs, SAMPLE_LOG)
    for rec, path in ((dense, TRT_DENSE), (deepep, TRT_DEEPEP), (log, SAMPLE_LOG)):
        assert rec.path == str(path)
        assert rec.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert rec.size_bytes == path.stat().st_size
    assert (dense.role, dense.benchmark_id, dense.concurrency, dense.comms) == (
        "dense",
        "fae6e9f1f9fc",
        4,
        None,
    )
    assert (deepep.role, deepep.benchmark_id, deepep.concurrency, deepep.comms) == (
        "deepep",
        "e27e731ea174",
        4,
        1,
    )
    assert (dense.export_format, dense.schema_version) == ("json", "1.3")
    assert (log.role, log.benchmark_id, log.concurrency, log.export_format) == (
        "kernel-log",
        None,
        None,
        None,
    )


def test_the_profile_holds_the_fits_and_reads_back_as_built() -> None:
    """What `serialise` returns is the profile as `--calibration` will read it: equal, field for
    field, to the one built (TOML keeps every digit), under a header that says what it is."""
    rs, cells, fit = trt_set()
    profile = build_profile(rs, cells, fit, None, records(rs), "mine.toml")
    assert (profile.kind, profile.schema_version) == (KIND, SCHEMA_VERSION)
    assert profile.label == "profile mine.toml" and profile.scenario == rs.scenario
    assert profile.constants.launch_us.value == fit.constants["launch_us"].q.scalar
    assert profile.constants.launch_us.builtin == fit.constants["launch_us"].builtin.scalar
    assert [(r.cell, r.arm, r.quantity) for r in profile.residuals] == [
        (r.cell, r.leg, r.quantity) for r in fit.residuals
    ]  # the record keeps schema 3's key `arm` for the leg
    assert [p.cell for p in profile.pairs] == ["your-c4-k1"] and profile.multicomm == []
    assert profile.kernel == []
    data, back = serialise(profile, "mine.toml")
    text = data.decode("utf-8")
    assert text == to_toml(profile)
    assert text.startswith("# deepep-calc calibration profile: written by `deepep-calc calibrate`")
    assert tomllib.loads(text)["kind"] == KIND
    assert back.model_dump() == profile.model_dump() and back.label == profile.label


def test_a_warning_is_recorded_once() -> None:
    """The run set's warnings and the kernel fit's, each once, in the order first given."""
    rs, cells, fit = trt_set()
    rs.warnings.append(rs.warnings[0])
    profile = build_profile(rs, cells, fit, None, records(rs), "p.toml")
    assert profile.warnings == list(dict.fromkeys(rs.warnings)) and len(profile.warnings) == 2


def test_a_profile_over_the_size_limit_is_refused_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader refuses a profile over MAX_PROFILE_BYTES (4 MB), so `serialise` never returns
    one: here the limit is set below this profile's 8 kB."""
    rs, cells, fit = trt_set()
    profile = build_profile(rs, cells, fit, None, records(rs), "p.toml")
    monkeypatch.setattr(profile_module, "MAX_PROFILE_BYTES", 1024)
    with pytest.raises(FileInputError, match="over the 0 MB a profile may hold; nothing was written") as info:
        serialise(profile, "out/p.toml")
    assert info.value.field == "-o" and info.value.message.startswith("out/p.toml: the profile would be")


def test_profile_round_trip_and_hooks(tmp_path: Path) -> None:
    rs, cells, fit = trt_set()
    out = tmp_path / "mine.toml"
    profile = build_profile(rs, cells, fit, None, records(rs), out.name)
    write_text_atomic(out, to_toml(profile), force=False)
    loaded = load_profile(out)
    assert loaded is load_profile(str(out))  # cached while unchanged
    assert [i.sha256 for i in loaded.inputs] == [i.sha256 for i in profile.inputs]
    assert {i.benchmark_id for i in loaded.inputs} == {"fae6e9f1f9fc", "e27e731ea174"}
    # cells keep every digit, and say where they come from
    cell = loaded.cells()[0]
    assert cell.deepep.itl_ms == cells[0].deepep.itl_ms
    assert cell.source.startswith("profile mine.toml: your DeepEP run AIPerf")
    r = resolve(Scenario(comms=1, concurrency=4))
    ef = loaded.apply(built_in_table(), r).engine("trtllm", False)
    assert ef.launch_us.scalar == fit.constants["launch_us"].q.scalar
    assert ef.launch_us.tag is Tag.DERIVED and "profile mine.toml" in ef.launch_us.source
    assert ef.proxy_lane_us.tag is Tag.ASSUMED
    assert loaded.kernel_fit("efa-proxy") is None
    with pytest.raises(InputError, match="fitted on trtllm runs, not vllm"):
        loaded.apply(built_in_table(), resolve(Scenario(engine="vllm")))
    with pytest.raises(FileInputError, match="already exists; pass --force"):
        write_text_atomic(out, "x", force=False)
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind

    # an edit is noticed (mtime / size change)
    text = out.read_text().replace('tool_version = "', 'tool_version = "edited ')
    out.write_text(text)
    assert load_profile(out).tool_version.startswith("edited ")


# --------------------------------------------------------------------------------------------
# what refuses to become a profile, through the command


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


def test_evaluate_refuses_a_profile_of_another_engine(
    capsys: pytest.CaptureFixture[str], trt_profile: Path
) -> None:
    code, out, err = run(capsys, "evaluate", "--calibration", trt_profile, "--engine", "vllm")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "--calibration" in err and "fitted on trtllm runs, not vllm" in err
