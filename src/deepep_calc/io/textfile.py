"""Read a user-supplied file as text, with the guards every importer needs.

Why a module of its own: the AIPerf reader, the DeepEP kernel-log reader and the calibration
profile all take paths the user typed, and each must refuse the same things the same way (an
oversized file before reading it, a FIFO that would block, a dangling symlink, non-UTF-8
bytes), every time as one line naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from deepep_calc.base.errors import FileInputError, printable

MAX_FILE_BYTES = 50 * 1024 * 1024
"""A summary export is tens of kB; anything this large is the wrong file (per-request JSONL?)."""


def _stat_problem(path: Path, exc: OSError | ValueError) -> str:
    """Why a path cannot be opened, in words: a dangling or looping symlink is not just missing."""
    if isinstance(exc, ValueError):  # e.g. an embedded NUL byte
        return f"is not a usable file name ({one_line(str(exc))})"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link loop; cannot read it"
    if isinstance(exc, FileNotFoundError):
        if path.is_symlink():
            return "no such file or directory (a symbolic link to a missing target)"
        return "no such file or directory"
    return f"cannot read it ({exc.strerror or exc})"


def stat_path(path: Path) -> os.stat_result:
    """`os.stat` (symlinks followed, as HF caches use them) with one-line errors."""
    try:
        return os.stat(path)
    except (OSError, ValueError) as exc:
        raise FileInputError(path, _stat_problem(path, exc)) from None


def _size(n: int) -> str:
    """A byte count as a refusal quotes it: bytes, kB or MB (powers of 1024), whole when it is."""
    for unit, scale in (("MB", 1024 * 1024), ("kB", 1024)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v.is_integer() else f"{v:.1f} {unit}"
    return f"{n:,} bytes"


def read_text_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a user-supplied text file with the guards every importer needs.

    Refuses before reading anything oversized (a wrong file should not cost memory) or that is
    not a regular file (reading a FIFO would block forever), and turns empty, unreadable and
    non-UTF-8 files into one-line errors naming the file. Symbolic links are followed.
    """
    st = stat_path(path)
    if stat.S_ISDIR(st.st_mode):
        raise FileInputError(path, "is a directory; expected a file")
    if not stat.S_ISREG(st.st_mode):
        raise FileInputError(path, "is not a regular file (a FIFO, socket or device); expected a file")
    size = st.st_size
    if size > max_bytes:
        raise FileInputError(
            path,
            f"file is {_size(size)}, over the {_size(max_bytes)} limit; refusing to read it "
            "(is it the right file?)",
        )
    try:
        # Non-blocking open, then fstat: a file swapped for a FIFO after the stat cannot hang us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise FileInputError(path, "is not a regular file; expected a file")
            data = fh.read(max_bytes + 1)
    except (OSError, ValueError) as exc:
        raise FileInputError(path, _stat_problem(path, exc)) from None
    if len(data) > max_bytes:  # grew between stat and read
        raise FileInputError(path, f"file is over the {max_bytes // (1024 * 1024)} MB limit")
    if not data:
        raise FileInputError(path, "the file is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileInputError(
            path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not text.strip():
        raise FileInputError(path, "the file is empty (whitespace only)")
    return text


def one_line(text: str) -> str:
    """Errors are shown as one line; exception texts from parsers are squeezed to fit, and
    control characters escaped (`errors.printable`)."""
    return printable(" ".join(str(text).split()))
