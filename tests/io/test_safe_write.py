"""The safe-write rules (`io/safe_write.py`, the contract of docs/security.md): every output is
checked before any work (`check_output`) and put in place all at once after it (`commit`): a file
is replaced atomically, keeping the replaced file's mode, written through a link, never half
written; several outputs go in together or not at all; an input is never overwritten. Every
refusal is one line naming the output and its flag.

The hostile cases (signals during the renames, full disks, file limits, a real server) are the
hardening suite's (tests/hardening/); these pin each rule on its own, quickly.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.io import safe_write
from deepep_calc.io.safe_write import (
    Output,
    check_distinct,
    check_output,
    commit,
    defer_while_held,
    leftover_temporaries,
    problem_code,
    problem_of,
    refuse_inputs,
    scenario_inputs,
    write_atomic,
    writing,
)
from one_line import assert_one_line


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _refusal(given: str | Path, flag: str = "-o", **kwargs: object) -> str:
    with pytest.raises(FileInputError) as info:
        check_output(given, flag, **kwargs)  # type: ignore[arg-type]
    assert info.value.field == flag
    return assert_one_line(info.value)


# checking, before any work ----------------------------------------------------------------------


def test_a_dash_is_standard_output_and_an_empty_name_is_refused() -> None:
    out = check_output("-", "-o")
    assert (out.kind, out.fd, out.is_stdout, out.is_file) == ("fd", 1, True, False)
    assert _refusal("") == "'': is not a file name"


def test_a_new_file_is_checked_without_creating_anything(tmp_path: Path) -> None:
    """The probe that finds a read-only file system is created and removed: nothing is left."""
    out = check_output(str(tmp_path / "rows.csv"), "-o")
    assert (out.kind, out.target, out.keep) == ("file", tmp_path / "rows.csv", None)
    assert _names(tmp_path) == []


def test_what_must_not_be_written_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text("keep me")
    read_only = tmp_path / "ro.csv"
    read_only.write_text("x")
    read_only.chmod(0o444)
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    assert _refusal(old, overwrite=False).endswith("old.toml: already exists; pass --force to overwrite it")
    assert _refusal(old, overwrite=False, force_hint="say so").endswith("already exists; say so")
    assert _refusal(tmp_path).endswith(": is a directory; give a file name")
    assert _refusal(read_only).endswith("ro.csv: is read-only; refusing to replace it")
    assert "its directory does not exist" in _refusal(tmp_path / "no" / "x.csv")
    assert "is a symbolic link to a missing file" in _refusal(tmp_path / "dangling")
    assert old.read_text() == "keep me"


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    """Given as a flag now, or known only later (an export found inside a folder): refused both
    times, naming the input's flag."""
    export = tmp_path / "run.json"
    export.write_text("{}")
    needle = f"is also an input of this command (--dense {export}); refusing to overwrite it"
    assert needle in _refusal(export, inputs=[("--dense", export)])
    out = check_output(str(export), "-o")
    refuse_inputs(out, [("--deepep", tmp_path / "other.json")])  # not the same file: fine
    with pytest.raises(FileInputError) as info:
        refuse_inputs(out, [("--deepep", export)])
    assert_one_line(info.value, "(--deepep ")


def test_two_outputs_naming_one_file_or_one_stream_are_refused(tmp_path: Path) -> None:
    a, b = check_output(str(tmp_path / "a"), "--html"), check_output(str(tmp_path / "a"), "-o")
    with pytest.raises(FileInputError) as info:
        check_distinct([a, None, b])
    assert_one_line(info.value, "is the same output as --html", "give two names")
    with pytest.raises(FileInputError):
        check_distinct([check_output("-", "-o"), check_output("-", "--html")])
    other = check_output(str(tmp_path / "b"), "--html")
    assert check_distinct([a, None, other]) == [a, other]


def test_a_fifo_without_a_reader_is_refused_after_its_wait(tmp_path: Path) -> None:
    """`check_output` waits FIFO_WAIT_S (2 s) for a reader; the same refusal at 0.05 s."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = Output(str(fifo), "--html", "stream", target=fifo)
    start = time.monotonic()
    with pytest.raises(FileInputError) as info:
        safe_write._open_fifo(fifo, out, wait_s=0.05)
    assert time.monotonic() - start < 1.0
    assert_one_line(info.value, "is a named pipe (FIFO) with no reader after 0.05 s")


# writing ----------------------------------------------------------------------------------------


def test_a_new_file_gets_the_mode_a_plain_open_would_give(tmp_path: Path) -> None:
    """0666 less the umask: 0640 under umask 027."""
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "new.txt"), b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640


def test_a_replaced_file_keeps_its_mode_and_a_link_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    real.chmod(0o600)
    (tmp_path / "link.txt").symlink_to(real)
    out = write_atomic(str(tmp_path / "link.txt"), "new", "-o")
    assert out.target == real
    assert (tmp_path / "link.txt").is_symlink() and real.read_text() == "new"
    assert real.stat().st_mode & 0o777 == 0o600
    assert _names(tmp_path) == ["link.txt", "real.txt"]  # no temporary file left


def test_an_error_inside_writing_leaves_no_file_and_no_temporary(tmp_path: Path) -> None:
    out = check_output(str(tmp_path / "c.csv"), "-o")
    with pytest.raises(RuntimeError), writing(out):
        out.stage(b"half")
        assert leftover_temporaries(tmp_path) != []  # staged beside the target...
        raise RuntimeError("boom")
    assert _names(tmp_path) == []  # ...and gone with the failure


def test_outputs_are_committed_together_or_not_at_all(tmp_path: Path) -> None:
    """The second rename fails (its target became a folder after the check): the first file,
    already replaced, is put back as it was."""
    (tmp_path / "a.html").write_text("old a")
    a, b = check_output(str(tmp_path / "a.html"), "--html"), check_output(str(tmp_path / "b.csv"), "-o")
    a.stage(b"new a")
    b.stage(b"new b")
    (tmp_path / "b.csv").mkdir()
    (tmp_path / "b.csv" / "f").write_text("x")
    with pytest.raises(FileInputError) as info:
        commit([a, b])
    assert_one_line(info.value, "b.csv", "Is a directory")
    assert info.value.field == "-o"
    assert (tmp_path / "a.html").read_text() == "old a"
    assert _names(tmp_path) == ["a.html", "b.csv"]


def test_staging_and_streaming_belong_to_their_kinds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only a regular-file output has a temporary file"):
        check_output("-", "-o").temp_path()
    with pytest.raises(ValueError, match="a regular-file output is staged, not streamed"):
        check_output(str(tmp_path / "x"), "-o").stream()


# helpers ----------------------------------------------------------------------------------------


def test_an_os_error_in_words() -> None:
    """pyarrow's errors carry their errno in the text only; a few are made plainer."""
    assert problem_code(OSError("[Errno 28] No space left on device")) == 28
    assert problem_code(OSError(errno.EIO, "Input/output error")) == errno.EIO
    assert problem_code(OSError("no number")) is None
    assert problem_of(OSError(errno.EFBIG, "File too large")) == "File too large (over the file-size limit)"
    assert problem_of(OSError("[errno 5] boom")) == os.strerror(5)  # the code, in the system's words
    assert problem_of(OSError(errno.ENOSPC, "No space\n left")) == "No space left"


def test_a_closed_pipe_on_standard_output_stays_a_broken_pipe(tmp_path: Path) -> None:
    """For the CLI, `| head` closing the pipe is a normal end; on a file it is a failure."""
    assert type(check_output("-", "-o").failed(BrokenPipeError())) is BrokenPipeError
    failed = check_output(str(tmp_path / "x"), "--json").failed(BrokenPipeError(errno.EPIPE, "x"))
    assert isinstance(failed, FileInputError) and failed.field == "--json"
    assert "the reader closed the pipe" in failed.message


def test_the_files_a_scenario_reads() -> None:
    """A config.json given by its folder may be named either way; presets simply match no file."""
    assert scenario_inputs("m", ["p.toml"]) == [
        ("--model", "m"),
        ("--model", os.path.join("m", "config.json")),
        ("--calibration", "p.toml"),
    ]
    assert scenario_inputs(None, None) == [] and scenario_inputs("", "") == []


def test_leftover_temporaries_are_this_modules_hidden_part_files(tmp_path: Path) -> None:
    for name in (".rows.csv.1a2b3c4d.part", ".rows.csv.1a2b3c4d.old", "rows.part", "rows.csv"):
        (tmp_path / name).write_text("")
    assert leftover_temporaries(tmp_path) == [tmp_path / ".rows.csv.1a2b3c4d.part"]


def test_a_signal_handler_defers_only_inside_a_held_section() -> None:
    """Outside, the handler acts now (False); inside, its action waits for the section's end."""
    done: list[str] = []
    assert defer_while_held(lambda: done.append("now")) is False and done == []
    with safe_write._signals_held():
        assert defer_while_held(lambda: done.append("later")) is True
        assert done == []
    assert done == ["later"]
