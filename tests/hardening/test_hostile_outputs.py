"""Outputs that never destroy or lie: every writer of the tool against hostile targets.

Each case builds its own targets in a temporary folder (character devices with `os.mknod`,
FIFOs, symbolic links, read-only files and folders, a full file system) and never touches the
real /dev. Across all of them: a refusal is exit 2 and one line naming the path, no traceback,
no temporary file left, nothing partial under a target's name, and no file replaced that was
not the named target.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_runner import run_cli
from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.io import safe_write as files
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import MAX_AXIS_VALUES, parse_values
from paths import FIXTURES

REAL = FIXTURES / "aiperf"  # real AIPerf exports, in the repo
PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
DENSE = f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
DEEPEP = f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"
HF_QWEN = FIXTURES / "hf" / "qwen3-30b-a3b-fp8" / "config.json"

FULL = (1, 7)  # the major / minor of /dev/full and /dev/null, recreated in a temporary folder
NULL = (1, 3)


# helpers ------------------------------------------------------------------------------------------


def refused(code: int, out: str, err: str, *needles: str) -> str:
    """Exit 2, one error line (no traceback) holding every needle; the line."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Error:" not in err.replace("error:", ""), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("deepep-calc: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    """Temporary files of any writer (ours end in .part; older ones in .tmp; backups .old)."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob(".*")
        if p.name.endswith((".part", ".tmp", ".old")) or ".tmp" in p.name
    )


def char_device(path: Path, numbers: tuple[int, int]) -> Path:
    """A character device node in a temporary folder (needs root; skipped otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*numbers))
    except PermissionError:
        pytest.skip("device nodes cannot be created here")
    return path


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def cli_process(*args: Any, **kw: Any) -> subprocess.CompletedProcess[str]:
    """`deepep-calc ARGS` in a real process (signals, limits and file descriptors are its own)."""
    return subprocess.run(
        [sys.executable, "-m", "deepep_calc.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


EVALUATE_MODULE = importlib.import_module("deepep_calc.api")  # where `evaluate` lives


def _no_work(*_: Any) -> Any:
    raise AssertionError("the command started computing before checking its outputs")


class FifoReader:
    """Reads a FIFO to the end in a thread (a FIFO opened for writing waits for a reader)."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.data = fh.read()

    def result(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return self.data


@pytest.fixture
def umask_027() -> Iterator[int]:
    """A umask that makes the mode check meaningful (the default 022 hides group bits)."""
    old = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(old)


def exports(folder: Path) -> tuple[Path, Path]:
    """Writable copies of the TRT-LLM conc-4 pair (the originals stay untouched)."""
    dense, deepep = folder / DENSE, folder / DEEPEP
    for name, target in ((DENSE, dense), (DEEPEP, deepep)):
        shutil.copyfile(REAL / name, target)
        target.chmod(0o644)
    return dense, deepep


# character devices, FIFOs, stdout --------------------------------------------------------------


def test_a_full_device_is_a_one_line_error_and_stays_a_device(tmp_path, capsys):
    full = char_device(tmp_path / "full", FULL)
    refused(*run_cli(capsys, "report", "--md", full), str(full), "No space left on device")
    assert is_char_device(full)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


@pytest.mark.parametrize(
    "case",
    ["report-md", "report-html", "sweep-csv", "sweep-parquet", "sweep-map", "calibrate"],
)
def test_every_writer_streams_to_a_device_and_leaves_it_a_device(case, tmp_path, capsys):
    names = {"sweep-csv": "sink.csv", "sweep-parquet": "sink.parquet", "sweep-map": "sink.html"}
    sink = char_device(tmp_path / names.get(case, "sink"), NULL)
    args = {
        "report-md": ["report", "--md", sink],
        "report-html": ["report", "--html", sink],
        "sweep-csv": ["sweep", "--nodes", "1,2", "-o", sink],
        "sweep-parquet": ["sweep", "--nodes", "1,2", "-o", sink],
        "sweep-map": ["sweep", "--nodes", "1,2", "--map", sink],
        "calibrate": ["calibrate", "--dense", REAL / DENSE, "--deepep", REAL / DEEPEP, "-o", sink, "--force"],
    }[case]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "Traceback" not in err
    assert is_char_device(sink)
    assert sorted(p.name for p in tmp_path.iterdir()) == [sink.name]


def test_dash_prints_the_report_to_stdout(capsys):
    code, out, err = run_cli(capsys, "report", "--md", "-")
    assert code == 0, err
    assert out.startswith("# deepep-calc report")
    assert "wrote" not in out and err == ""


def test_sweep_rows_to_stdout_send_the_summary_to_stderr(capsys):
    code, out, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", "-")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith('"model","instance","nodes"') and len(lines) == 3
    assert "scenarios in 1 combination" in err
    code, out, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", "-", "--json")
    refused(code, out, err, "stdout")


def test_a_link_to_stdout_is_written_through_not_replaced(tmp_path):
    link = tmp_path / "stdout.md"
    link.symlink_to("/proc/self/fd/1")  # the process's own stdout (a pipe here)
    run = cli_process("report", "--md", link)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("# deepep-calc report")
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert run.stderr == ""


def test_an_output_that_is_where_stdout_already_goes_is_written_once(tmp_path):
    target = tmp_path / "out.md"
    with open(target, "wb") as fh:  # `deepep-calc report --md out.md > out.md`
        run = subprocess.run(
            [sys.executable, "-m", "deepep_calc.cli", "report", "--md", str(target)],
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    text = target.read_text()
    assert text.startswith("# deepep-calc report") and text.count("# deepep-calc report") == 1


def test_a_fifo_is_streamed_to_and_stays_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    code, _, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", fifo)
    assert code == 0, err
    rows = reader.result().decode().splitlines()
    assert rows[0].startswith('"model"') and len(rows) == 3
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    reader = FifoReader(fifo)
    code, _, err = run_cli(capsys, "report", "--md", fifo)
    assert code == 0, err
    assert reader.result().startswith(b"# deepep-calc report")
    assert [p.name for p in tmp_path.iterdir()] == ["pipe.csv"]


def test_a_fifo_whose_reader_leaves_is_a_one_line_error(tmp_path, capsys):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)

    def read_a_little() -> None:
        with open(fifo, "rb") as fh:
            fh.read(10)

    thread = threading.Thread(target=read_a_little, daemon=True)
    thread.start()
    code, out, err = run_cli(capsys, "sweep", "--concurrency", "1:20000", "-o", fifo)
    thread.join(timeout=30)
    refused(code, out, err, str(fifo), "closed the pipe")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("plan", "--concurrency", "16", "--max-nodes", "1", "--instances", "p5en", "--html"),
        ("report", "--html"),
        ("sweep", "--nodes", "1,2", "-o"),
    ],
    ids=["plan-html", "report-html", "sweep-csv"],
)
def test_a_fifo_nobody_reads_is_refused_in_one_line_not_waited_on(tmp_path, args):
    """A named pipe with no reader: opening it for writing would wait forever. It is refused
    in one line (exit 2) within seconds, before any work, and stays a FIFO."""
    fifo = tmp_path / ("pipe.csv" if args[0] == "sweep" else "pipe.html")
    os.mkfifo(fifo)
    started = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "deepep_calc.cli", *args, str(fifo)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args[0]} waited for a reader of {fifo} instead of refusing it")
    assert time.monotonic() - started < 30
    refused(run.returncode, run.stdout, run.stderr, str(fifo), "no reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == [fifo.name]


# symbolic links -------------------------------------------------------------------------------------


def test_a_link_to_a_file_replaces_the_file_and_keeps_the_link(tmp_path, capsys):
    real = tmp_path / "real.md"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real.name)
    code, _, err = run_cli(capsys, "report", "--md", link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text().startswith("# deepep-calc report")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # a replacement keeps the file's mode
    assert leftovers(tmp_path) == []


def test_a_link_into_another_folder_is_written_atomically_there(tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "rows.csv").write_text("old")
    link = tmp_path / "rows.csv"
    link.symlink_to(other / "rows.csv")
    code, _, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", link)
    assert code == 0, err
    assert link.is_symlink()
    assert (other / "rows.csv").read_text().startswith('"model"')
    assert leftovers(tmp_path) == []


def test_a_dangling_link_is_refused_and_nothing_is_created(tmp_path, capsys):
    link = tmp_path / "report.md"
    link.symlink_to(tmp_path / "missing" / "target.md")
    refused(*run_cli(capsys, "report", "--md", link), str(link), "symbolic link to a missing file")
    assert link.is_symlink() and not (tmp_path / "missing").exists()
    link2 = tmp_path / "here.md"
    link2.symlink_to("nowhere.md")
    refused(*run_cli(capsys, "report", "--md", link2), "symbolic link to a missing file")
    assert not (tmp_path / "nowhere.md").exists()


def test_a_link_loop_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    refused(*run_cli(capsys, "report", "--md", a), str(a))
    assert a.is_symlink() and b.is_symlink()


def test_a_link_to_a_device_streams_to_the_device(tmp_path, capsys):
    full = char_device(tmp_path / "full", FULL)
    null = char_device(tmp_path / "null", NULL)
    to_full, to_null = tmp_path / "f.md", tmp_path / "n.md"
    to_full.symlink_to(full.name)
    to_null.symlink_to(null.name)
    refused(*run_cli(capsys, "report", "--md", to_full), "No space left on device")
    code, _, err = run_cli(capsys, "report", "--md", to_null)
    assert code == 0, err
    for link, node in ((to_full, full), (to_null, null)):
        assert link.is_symlink() and is_char_device(node)
    assert leftovers(tmp_path) == []


# refusals before any work ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--md", "{ro}"],
        ["report", "--html", "{ro}"],
        ["sweep", "--nodes", "1,2", "-o", "{ro_csv}"],
        ["sweep", "--nodes", "1,2", "--map", "{ro_html}"],
    ],
)
def test_a_read_only_file_is_refused_even_as_root(args, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _no_work)
    monkeypatch.setattr(EVALUATE_MODULE, "evaluate", _no_work)
    targets = {"ro": tmp_path / "ro.md", "ro_csv": tmp_path / "ro.csv", "ro_html": tmp_path / "ro.html"}
    for path in targets.values():
        path.write_text("keep me")
        path.chmod(0o444)
    argv = [a.format(**targets) for a in args]
    refused(*run_cli(capsys, *argv), "read-only")
    for path in targets.values():
        assert path.read_text() == "keep me"
    assert leftovers(tmp_path) == []


def test_calibrate_refuses_a_read_only_profile_even_with_force(tmp_path, capsys):
    out = tmp_path / "p.toml"
    out.write_text("keep me")
    out.chmod(0o444)
    refused(
        *run_cli(
            capsys, "calibrate", "--dense", REAL / DENSE, "--deepep", REAL / DEEPEP, "-o", out, "--force"
        ),
        "read-only",
    )
    assert out.read_text() == "keep me"


@pytest.mark.parametrize("flag", ["-o", "--map"])
def test_a_read_only_folder_is_refused_before_any_row(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _no_work)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    target = folder / ("rows.csv" if flag == "-o" else "map.html")
    try:
        refused(*run_cli(capsys, "sweep", "--nodes", "1,2", flag, target), str(target), "read-only")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--md", "{dir}"],
        ["sweep", "--nodes", "1,2", "-o", "{dir_csv}"],
        ["sweep", "--nodes", "1,2", "--map", "{dir_html}"],
        ["sweep", "--nodes", "1,2", "-o", "{missing}/rows.csv"],
    ],
)
def test_a_directory_or_a_missing_folder_is_refused_before_any_work(args, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _no_work)
    names = {"dir": tmp_path / "d", "dir_csv": tmp_path / "d.csv", "dir_html": tmp_path / "d.html"}
    for path in names.values():
        path.mkdir()
    names["missing"] = tmp_path / "missing"
    line = refused(*run_cli(capsys, *[a.format(**names) for a in args]))
    assert "is a directory" in line or "does not exist" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "d.csv", "d.html"]
    assert all(not any(p.iterdir()) for p in tmp_path.iterdir())


def test_sweep_checks_the_map_before_committing_the_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _no_work)
    rows = tmp_path / "ok.csv"
    refused(*run_cli(capsys, "sweep", "--nodes", "1,2", "-o", rows, "--map", tmp_path / "bad" / "x.html"))
    assert list(tmp_path.iterdir()) == []


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(EVALUATE_MODULE, "evaluate", _no_work)
    same = tmp_path / "out"
    refused(*run_cli(capsys, "report", "--html", same, "--md", same), "same output")
    (tmp_path / "real.md").write_text("keep")
    (tmp_path / "alias.html").symlink_to("real.md")
    refused(*run_cli(capsys, "report", "--md", tmp_path / "real.md", "--html", tmp_path / "alias.html"))
    assert (tmp_path / "real.md").read_text() == "keep"


# an output is never one of the inputs ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["same", "read-only", "link", "hard-link", "folder"])
def test_calibrate_never_overwrites_an_input_export(how, tmp_path, capsys):
    dense, deepep = exports(tmp_path)
    before = {p.name: p.read_bytes() for p in (dense, deepep)}
    target: Path = deepep
    dense_arg: Path = dense
    if how == "read-only":
        deepep.chmod(0o444)
    elif how == "link":
        target = tmp_path / "profile.toml"
        target.symlink_to(deepep.name)
    elif how == "hard-link":
        target = tmp_path / "profile.toml"
        os.link(deepep, target)
    elif how == "folder":  # the export is found inside a folder: known only after reading it
        folder = tmp_path / "run"
        folder.mkdir()
        dense_arg = folder
        target = folder / "profile_export_aiperf.json"
        shutil.copyfile(dense, target)
        before[target.name] = target.read_bytes()
    args = ["calibrate", "--dense", dense_arg, "--deepep", deepep, "--engine", "trtllm", "-o", target]
    line = refused(*run_cli(capsys, *args, "--force"))
    assert ("input of this command" in line) or ("read-only" in line)
    for p in (dense, deepep, target):
        if p.name in before:
            assert p.read_bytes() == before[p.name]
    assert leftovers(tmp_path) == []


def test_report_never_overwrites_the_config_it_reads(tmp_path, capsys):
    folder = tmp_path / "model"
    folder.mkdir()
    config = folder / "config.json"
    shutil.copyfile(HF_QWEN, config)
    before = config.read_bytes()
    refused(*run_cli(capsys, "report", "--model", folder, "--md", config), "input of this command")
    refused(*run_cli(capsys, "report", "--model", config, "--html", config), "input of this command")
    assert config.read_bytes() == before


# calibrate validates the profile before writing -------------------------------------------------


@pytest.mark.slow
def test_a_profile_the_reader_would_refuse_is_never_written(tmp_path, capsys):
    dense, deepep = exports(tmp_path)
    for path in (dense, deepep):
        doc = json.loads(path.read_text())
        doc["benchmark_id"] = "b" * 600_000
        path.write_text(json.dumps(doc))
    good = tmp_path / "good.toml"
    code, _, err = run_cli(
        capsys, "calibrate", "--dense", REAL / DENSE, "--deepep", REAL / DEEPEP, "-o", good
    )
    assert code == 0, err
    kept = good.read_bytes()
    line = refused(*run_cli(capsys, "calibrate", "--dense", dense, "--deepep", deepep, "-o", good, "--force"))
    assert "4 MB" in line and "nothing was written" in line
    assert good.read_bytes() == kept
    assert leftovers(tmp_path) == []


def test_a_profile_to_stdout_is_the_profile_alone(capsys):
    code, out, err = run_cli(
        capsys, "calibrate", "--dense", REAL / DENSE, "--deepep", REAL / DEEPEP, "-o", "-"
    )
    assert code == 0, err
    assert out.startswith("# deepep-calc calibration profile")
    import tomllib

    assert tomllib.loads(out)["kind"] == "deepep-calc calibration profile"


# a full file system -----------------------------------------------------------------------------------


def _fsize_limit(limit: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--html", "{d}/r.html"],
        ["sweep", "--concurrency", "1:30000", "-o", "{d}/rows.csv"],
        ["sweep", "--concurrency", "1:30000", "-o", "{d}/rows.parquet"],
        ["sweep", "--nodes", "1:64", "--concurrency", "1:512:x2", "--map", "{d}/map.html"],
    ],
)
def test_a_file_size_limit_is_a_one_line_error_and_leaves_nothing(args, tmp_path):
    run = cli_process(*[a.format(d=tmp_path) for a in args], preexec_fn=_fsize_limit(200_000))
    line = refused(run.returncode, run.stdout, run.stderr, "File too large")
    assert str(tmp_path) in line
    assert list(tmp_path.iterdir()) == []


def test_sweep_commits_both_outputs_or_neither(tmp_path):
    rows, chart = tmp_path / "rows.csv", tmp_path / "map.html"
    rows.write_text("previous rows\n")
    # the CSV (~30 kB) fits under the limit, the map (plotly inlined, megabytes) does not
    run = cli_process(
        "sweep", "--nodes", "1,2", "--concurrency", "1:64:x2", "-o", rows, "--map", chart,
        preexec_fn=_fsize_limit(500_000),
    )  # fmt: skip
    refused(run.returncode, run.stdout, run.stderr, str(chart), "File too large")
    assert rows.read_text() == "previous rows\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs (a real ENOSPC); skipped where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_mid_sweep_is_a_one_line_error(small_tmpfs, capsys):
    target = small_tmpfs / "rows.csv"
    target.write_text("previous rows\n")
    code, out, err = run_cli(capsys, "sweep", "--concurrency", "1:50000", "-o", target)
    refused(code, out, err, str(target), "No space left on device")
    assert target.read_text() == "previous rows\n"
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["rows.csv"]
    code, out, err = run_cli(capsys, "report", "--html", small_tmpfs / "r.html")
    refused(code, out, err, "No space left on device")
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize(
    ("code", "words"),
    [(errno.EACCES, "Permission denied"), (errno.EISDIR, "Is a directory"),
     (errno.EROFS, "Read-only file system"), (errno.EIO, "Input/output error"), (errno.EDQUOT, "quota"),
     (errno.EPERM, "not permitted")],
)  # fmt: skip
def test_any_failure_at_the_last_step_is_one_line_and_keeps_the_old_file(
    code, words, tmp_path, capsys, monkeypatch
):
    target = tmp_path / "r.md"
    target.write_text("previous report")

    def replace(src: Any, dst: Any) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "replace", replace)
    refused(*run_cli(capsys, "report", "--md", target), str(target), words)
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


# all or nothing, and what a created file looks like ------------------------------------------


def test_a_failed_rename_undoes_the_renames_before_it(tmp_path, monkeypatch):
    first, second = tmp_path / "a.csv", tmp_path / "b.html"
    first.write_text("old a")
    outs = [files.check_output(first, "-o"), files.check_output(second, "--map")]
    outs[0].stage(b"new a")
    outs[1].stage(b"new b")
    real_replace = os.replace
    calls = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(dst)
        if Path(dst) == second:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(FileInputError, match="Input/output error"):
        files.commit(outs)
    monkeypatch.setattr(os, "replace", real_replace)
    assert first.read_text() == "old a"  # restored from its hard-link backup
    assert not second.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("r.html", ["report", "--html", "{t}"]),
        ("r.md", ["report", "--md", "{t}"]),
        ("rows.csv", ["sweep", "--nodes", "1,2", "-o", "{t}"]),
        ("rows.parquet", ["sweep", "--nodes", "1,2", "-o", "{t}"]),
        ("map.html", ["sweep", "--nodes", "1,2", "--map", "{t}"]),
        ("map.png", ["sweep", "--nodes", "1,2", "--map", "{t}"]),
        ("p.toml", ["calibrate", "--dense", str(REAL / DENSE), "--deepep", str(REAL / DEEPEP), "-o", "{t}"]),
        ("plan.html", ["plan", "--concurrency", "32", "--max-nodes", "2", "--html", "{t}"]),
    ],
)
def test_created_files_get_the_mode_of_a_plain_open(name, args, umask_027, tmp_path, capsys):
    target = tmp_path / name
    code, _, err = run_cli(capsys, *[a.format(t=target) for a in args])
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask_027
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_stdlib_csv_writer_mode_and_replacement_mode(umask_027, tmp_path, capsys, monkeypatch):
    from deepep_calc.io import sweep_table as sweep_output

    monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    target = tmp_path / "rows.csv"
    code, _, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", target)
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    target.chmod(0o604)
    code, _, err = run_cli(capsys, "sweep", "--nodes", "1,2,4", "-o", target)
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o604 and len(target.read_text().splitlines()) == 4


def test_the_helper_fsyncs_the_file_and_its_folder(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    files.write_atomic(tmp_path / "x.md", "text")
    assert synced == ["file", "dir"]
    assert (tmp_path / "x.md").read_text() == "text"


# signals --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "sig", "raised"),
    [
        ("close", signal.SIGTERM, "Stopped"),  # the temporary file exists, its name is not kept yet
        ("close", signal.SIGINT, "KeyboardInterrupt"),
        ("unlink", signal.SIGHUP, "Stopped"),  # a second signal while the first one's cleanup runs
    ],
)
def test_a_signal_inside_a_file_step_waits_for_its_end(tmp_path, monkeypatch, where, sig, raised):
    """The CLI's handler runs at the worst bytecode: just after the temporary file is created
    (before its name is kept for the cleanup), or in the middle of that cleanup. It waits for
    the step to end, then stops the command as it would have; no temporary file is left. (The
    mid-sweep test below can land there on a loaded machine, rarely; this one always does.)"""
    from deepep_calc.cli import program

    out = files.check_output(str(tmp_path / "rows.csv"), "-o")
    real = getattr(os, where)
    fired: list[str] = []

    def step(*args: Any) -> Any:
        # close: just after the file is created; unlink: just before the cleanup removes it
        if where == "close":
            real(*args)
        if not fired:
            fired.append(where)
            program._stop(sig, None)  # as if the signal arrived right here
        return real(*args) if where == "unlink" else None

    expected = program.Stopped if raised == "Stopped" else KeyboardInterrupt
    with pytest.raises(expected), files.writing(out):
        if where == "unlink":
            out.temp_path()
            monkeypatch.setattr(os, where, step)
            raise program.Stopped(signal.SIGTERM)  # the first signal: its cleanup unlinks
        monkeypatch.setattr(os, where, step)
        out.temp_path()
        pytest.fail("the signal held off during the temporary file's creation never came")
    assert fired == [where]
    assert files.leftover_temporaries(tmp_path) == []
    assert not (tmp_path / "rows.csv").exists()


def test_a_file_step_on_another_thread_holds_no_signal_back() -> None:
    """Handlers run on the main thread: a step another thread is in must not make the main
    thread's signal wait (it would then be raised on that thread, far from the command)."""
    inside, leave = threading.Event(), threading.Event()

    def step() -> None:
        with files._signals_held():
            inside.set()
            leave.wait(10)

    worker = threading.Thread(target=step)
    worker.start()
    try:
        assert inside.wait(10)
        assert files.defer_while_held(lambda: None) is False
    finally:
        leave.set()
        worker.join(10)
    with files._signals_held():  # and on the main thread it does wait
        assert files.defer_while_held(lambda: None) is True


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
@pytest.mark.parametrize("existing", [False, True])
def test_a_terminating_signal_mid_sweep_leaves_no_temporary(sig, code, existing, tmp_path):
    target = tmp_path / "rows.parquet"
    if existing:
        target.write_bytes(b"previous rows")
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepep_calc.cli", "sweep", "--concurrency", "1:1000000", "--isl", "100,200",
         "--chunk-rows", "20000", "-o", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not files.leftover_temporaries(tmp_path):  # rows are being written
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep never started writing"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.strip() == f"deepep-calc: stopped by {sig.name}"
    assert leftovers(tmp_path) == []
    if existing:
        assert target.read_bytes() == b"previous rows"
    else:
        assert not target.exists()


# ranges are counted before they are built ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["1:10000000:x1.000000001", "1:10000000:x1.0000001", "1:1e308:+1e-300", "1:1e300:x1.0000000000001",
     "1:10:x1e400", "1:10:xnan", "1:10:+inf", "1:2000000"],
)  # fmt: skip
def test_a_huge_range_is_refused_without_building_it(text, monkeypatch):
    real_arange = np.arange

    def bounded(*args: Any, **kw: Any) -> Any:
        count = args[0] if len(args) == 1 else None
        assert count is None or count <= MAX_AXIS_VALUES, f"built {count:,} values"
        return real_arange(*args, **kw)

    monkeypatch.setattr(np, "arange", bounded)
    with pytest.raises(InputError, match="--isl"):
        parse_values("isl", text)


def test_a_huge_range_on_the_command_line_is_one_line(capsys):
    refused(*run_cli(capsys, "sweep", "--isl", "1:10000000:x1.000000001"), "at most 1,000,000 values")
    refused(*run_cli(capsys, "sweep", "--isl", "1:1000000", "--osl", "1:1000"), "rows or more")


# terminal escapes ---------------------------------------------------------------------------------


ESCAPES = "\x1b[2J\x1b]52;c;aGVsbG8=\x07\u202e"


def test_a_hostile_model_name_reaches_the_terminal_escaped(tmp_path, capsys):
    doc = json.loads(HF_QWEN.read_text())
    doc["_name_or_path"] = f"evil{ESCAPES}name"
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc))
    for args in (["evaluate"], ["report", "--md", "-"], ["sweep", "--nodes", "1,2"]):
        code, out, err = run_cli(capsys, *args, "--model", folder)
        assert code == 0, err
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        if args[0] != "sweep":
            assert "evil\\x1b[2J" in out


def test_hostile_file_names_are_escaped_in_every_line(tmp_path, capsys):
    target = tmp_path / f"rows{ESCAPES}[bold red]x.csv"
    code, out, err = run_cli(capsys, "sweep", "--nodes", "1,2", "-o", target)
    assert code == 0, err
    assert "\x1b" not in out and "[bold red]x.csv" in out  # no escape, and no rich markup
    code, out, err = run_cli(capsys, "report", "--md", tmp_path / f"r{ESCAPES}.md")
    assert code == 0 and "\x1b" not in out and "wrote" in out
    code, out, err = run_cli(capsys, "report", "--md", tmp_path / "missing" / f"r{ESCAPES}.md")
    refused(code, out, err)
    assert "\x1b" not in err


def test_a_hostile_benchmark_id_is_escaped_in_the_calibrate_summary(tmp_path, capsys):
    dense, deepep = exports(tmp_path)
    for path in (dense, deepep):
        doc = json.loads(path.read_text())
        doc["benchmark_id"] = f"id{ESCAPES}"
        path.write_text(json.dumps(doc))
    out_path = tmp_path / "p.toml"
    code, out, err = run_cli(capsys, "calibrate", "--dense", dense, "--deepep", deepep, "-o", out_path)
    assert code == 0, err
    assert "\x1b" not in out and "\x1b" not in err
    code, out, err = run_cli(
        capsys, "evaluate", "--calibration", out_path, "--comms", "1", "--concurrency", "4"
    )
    assert code == 0, err
    assert "\x1b" not in out


# the small ones ----------------------------------------------------------------------------------


def test_kv_dtype_is_case_insensitive(capsys):
    code, out, err = run_cli(capsys, "evaluate", "--kv-dtype", "FP8", "--json")
    assert code == 0, err
    same = run_cli(capsys, "evaluate", "--kv-dtype", "fp8", "--json")[1]
    assert json.loads(out)["arms"] == json.loads(same)["arms"]
    refused(*run_cli(capsys, "evaluate", "--kv-dtype", "fp9"), "--kv-dtype: 'fp9'")


def test_whole_numbers_are_quoted_as_whole_numbers(capsys):
    line = refused(*run_cli(capsys, "sweep", "--nodes", "1:1025"), "--nodes: 1025 is not allowed")
    assert "1025.0" not in line
    line = refused(*run_cli(capsys, "sweep", "--nodes", "2.5"), "--nodes")
    assert "2.5" in line


def test_an_engine_mismatch_says_what_the_names_say(tmp_path, capsys):
    dense, deepep = exports(tmp_path)
    vllm_dense = tmp_path / dense.name.replace("trtllm-0.21", "vllm-0.24")
    dense.rename(vllm_dense)
    line = refused(
        *run_cli(capsys, "calibrate", "--dense", vllm_dense, "--deepep", deepep, "-o", tmp_path / "p.toml")
    )
    assert "None" not in line and "trtllm and vllm" in line and line.count("--engine") >= 1
    assert not (tmp_path / "p.toml").exists()


@pytest.mark.parametrize("args", [[], ["validate"], ["validate", "--md"], ["models"], ["sweep", "-o", "-"]])
def test_a_closed_stdout_pipe_is_a_normal_end(args):
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepep_calc.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # like `| head` that has already exited: the first write hits a closed pipe
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.decode()) == (0, "")


def test_a_reader_that_stops_early_is_a_normal_end():
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepep_calc.cli", "sweep", "--concurrency", "1:20000", "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.decode()) == (0, "")
