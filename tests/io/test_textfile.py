"""Reading a user's file as text (`io/textfile.py`): the guards every importer shares (an oversized
file refused before it is read, a FIFO that would block, a dangling or looping symlink, empty and
non-UTF-8 files), each a one-line error naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.textfile import MAX_FILE_BYTES, one_line, read_text_file, stat_path
from one_line import assert_one_line


def _refusal(path: Path, **kwargs: int) -> str:
    with pytest.raises(FileInputError) as info:
        read_text_file(path, **kwargs)
    return assert_one_line(info.value, str(path))


def test_text_is_read_as_utf8_without_its_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": "\xc3\xa9"}')
    assert read_text_file(path) == '{"a": "é"}'


def test_a_link_to_a_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert read_text_file(tmp_path / "link.json") == "{}"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "the file is empty"),
        (b"  \n\t\n", "the file is empty (whitespace only)"),
        (b"ok\xff", "not UTF-8 text (byte 0xff at offset 2)"),
    ],
)
def test_an_empty_or_undecodable_file_is_refused(tmp_path: Path, data: bytes, needle: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(data)
    assert needle in _refusal(path)


def test_what_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    """A FIFO would block the read forever: refused from its stat alone (this returns at once)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "is not a regular file (a FIFO, socket or device)" in _refusal(fifo)
    assert "is a directory; expected a file" in _refusal(tmp_path)


def test_a_missing_file_a_dangling_link_and_a_loop_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert _refusal(tmp_path / "absent").endswith(": no such file or directory")
    assert "(a symbolic link to a missing target)" in _refusal(tmp_path / "dangling")
    assert "is a symbolic link loop" in _refusal(tmp_path / "loop")
    with pytest.raises(FileInputError) as info:
        stat_path(Path("a\0b"))
    assert_one_line(info.value, "is not a usable file name")


def test_the_size_limit_is_the_callers(tmp_path: Path) -> None:
    """50 MB by default; a caller may set its own (10 bytes here: 11 are over, 10 are not)."""
    assert MAX_FILE_BYTES == 50 * 1024 * 1024
    path = tmp_path / "x.txt"
    path.write_text("0123456789")
    assert read_text_file(path, max_bytes=10) == "0123456789"
    path.write_text("0123456789a")
    assert "file is 11 bytes, over the 10 bytes limit" in _refusal(path, max_bytes=10)


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "huge_profile.json"
    with big.open("wb") as fh:  # sparse: no 50 MB actually written
        fh.truncate(50 * 1024 * 1024 + 1)
    with pytest.raises(FileInputError, match=r"file is 50\.0 MB, over the 50 MB limit") as info:
        load_aiperf(big)
    assert "huge_profile.json" in info.value.message


def test_one_line_squeezes_whitespace_and_escapes_control_characters() -> None:
    """A parser's message may hold newlines and a terminal escape: one line, the escape visible."""
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x\x1b[2Jy") == "x\\x1b[2Jy"
