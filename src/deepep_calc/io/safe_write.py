"""Safe writes: the one way every output of the tool reaches the disk or a stream.

Every output (reports, sweep tables, maps, calibration profiles, the generated catalogs and
docs) is checked with `check_output` before any work and committed with `commit` after all of
it. The rules themselves (standard output and devices, atomic replacement, links written
through, what is refused, modes, several outputs committed together, signals held during the
renames) are the contract in docs/security.md ("What every file the CLI writes guarantees"); each is
implemented once here.

Every failure is a `FileInputError`: one line, exit code 2. A closed pipe on standard output
is left as `BrokenPipeError`: the CLI treats it as a normal end.

Why one module: the write rules are one contract (check before work, stage, commit all or
nothing, undo on failure, signals held during the renames); splitting the checks from the
commit would let a writer use one half.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from ..base.errors import FileInputError, printable

Kind = Literal["fd", "stream", "file"]

STDOUT = "-"
TEMP_SUFFIX = ".part"
_NAME_ROOM = 200  # bytes of the target's name kept in the temporary name (limit 255)
_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def problem_code(exc: OSError) -> int | None:
    """The errno of an OSError (pyarrow's errors carry it only in their text)."""
    if exc.errno is not None:
        return int(exc.errno)
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    return int(found.group(1)) if found else None


def problem_of(exc: OSError) -> str:
    """An OSError as a short phrase: the system's own words, a few of them made plainer."""
    code = problem_code(exc)
    plainer = {
        errno.EFBIG: "File too large (over the file-size limit)",
        errno.EPIPE: "the reader closed the pipe before everything was written",
        errno.ENXIO: "No device or reader on the other end",
    }
    if code in plainer:
        return plainer[code]
    if code is not None and exc.strerror is None:
        return os.strerror(code)
    text = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(text.split())


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _not_writable(st: os.stat_result, path: Path, access: int = os.W_OK) -> str | None:
    """Why `path` must not be written, judged by its mode bits first: root passes every
    access() check, and what someone made read-only must stay as it is even for root."""
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "read-only"
    if not st.st_mode & stat.S_IWUSR and (not hasattr(os, "geteuid") or os.geteuid() in (0, st.st_uid)):
        return "read-only for its owner"
    if not os.access(path, access):
        return "not writable by this user"
    return None


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable; file systems that cannot fsync a directory are skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass(eq=False)
class Output:
    """One output of a command, checked before any work and written only by `commit`.

    `kind` is "fd" (standard output or error), "stream" (a character device or FIFO, opened
    and written) or "file" (a regular file, replaced atomically at `target`).
    """

    given: str
    flag: str
    kind: Kind
    target: Path | None = None  # the file replaced, or the device opened
    fd: int | None = None  # 1 or 2 for kind "fd"
    keep: os.stat_result | None = None  # the regular file being replaced, if any
    _temp: Path | None = field(default=None, repr=False)
    _staged: bytes | None = field(default=None, repr=False)
    _backup: Path | None = field(default=None, repr=False)
    _handle: IO[bytes] | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The path as the user typed it, safe to print."""
        return printable(self.given)

    @property
    def is_stdout(self) -> bool:
        return self.kind == "fd" and self.fd == 1

    @property
    def is_file(self) -> bool:
        return self.kind == "file"

    def failed(self, problem: str | OSError) -> BaseException:
        """The one-line error for this output (an OSError is put in words).

        A closed pipe on standard output stays a BrokenPipeError: for the CLI that is the
        reader having seen enough (`| head`), a normal end rather than a failure.
        """
        if isinstance(problem, OSError):
            pipe = isinstance(problem, BrokenPipeError) or problem_code(problem) == errno.EPIPE
            if pipe and self.kind == "fd":
                return BrokenPipeError(errno.EPIPE, "Broken pipe")
            return FileInputError(self.shown, problem_of(problem), self.flag)
        return FileInputError(self.shown, problem, self.flag)

    # staging -------------------------------------------------------------------------------

    def temp_path(self) -> Path:
        """The temporary file (created empty, mode 0666 less the umask) a writer fills by path."""
        if self.kind != "file" or self.target is None:
            raise ValueError(f"{self.given}: only a regular-file output has a temporary file")
        if self._temp is None:
            with _signals_held():  # the file exists only once its name is kept for discard()
                self._temp = _create_temp(self.target, self)
        return self._temp

    def staged(self) -> None:
        """The writer has filled `temp_path()`: set its mode and flush it to disk."""
        temp = self.temp_path()
        try:
            self._settle(temp)
            _fsync_path(temp)
        except OSError as exc:
            raise self.failed(exc) from None

    def stage(self, data: bytes) -> None:
        """Hold `data` for this output: written to the temporary file now, to a stream at commit."""
        if self.kind != "file":
            self._staged = bytes(data)
            return
        temp = self.temp_path()
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_TRUNC)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._settle(temp)
        except OSError as exc:
            raise self.failed(exc) from None

    def stream(self) -> IO[bytes]:
        """A binary handle on the stream itself, for a writer that cannot wait for commit (sweep rows)."""
        if self.kind == "file":
            raise ValueError(f"{self.given}: a regular-file output is staged, not streamed")
        if self._handle is None:
            self._handle = self._open_stream()
        return self._handle

    def _open_stream(self) -> IO[bytes]:
        if self.kind == "fd":
            text = sys.stdout if self.fd == 1 else sys.stderr
            text.flush()
            buffer = getattr(text, "buffer", None)
            if buffer is not None:
                return buffer  # type: ignore[no-any-return]
            return os.fdopen(os.dup(self.fd or 1), "wb")
        assert self.target is not None
        try:
            # No O_CREAT, no O_TRUNC: if the device was swapped for a file since the check,
            # the fstat below notices before a byte is written.
            fd = os.open(self.target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        except OSError as exc:
            raise self.failed(exc) from None
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            os.close(fd)
            raise self.failed("changed into something other than a device or FIFO; nothing written")
        return os.fdopen(fd, "wb")

    def _settle(self, temp: Path) -> None:
        """A replacement keeps the replaced file's permission bits (and owner, for root)."""
        if self.keep is None:
            return
        os.chmod(temp, stat.S_IMODE(self.keep.st_mode) & 0o777)
        if hasattr(os, "geteuid") and os.geteuid() == 0 and self.keep.st_uid != 0:
            with contextlib.suppress(OSError):
                os.chown(temp, self.keep.st_uid, self.keep.st_gid)

    # committing ----------------------------------------------------------------------------

    def _write_stream(self) -> None:
        if self._staged is None and self._handle is None:
            return
        handle = self.stream()
        try:
            if self._staged is not None:
                handle.write(self._staged)
            handle.flush()
        except OSError as exc:
            raise self.failed(exc) from None
        finally:
            self._staged = None
            self._close_stream()

    def _close_stream(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None or self.kind == "fd":
            return
        try:
            handle.close()
        except OSError as exc:
            raise self.failed(exc) from None

    def discard(self) -> None:
        """Drop what was staged: the temporary file goes, the target is untouched (a second
        signal waits until it has gone)."""
        with _signals_held():
            self._discard()

    def _discard(self) -> None:
        self._staged = None
        if self._handle is not None and self.kind != "fd":
            with contextlib.suppress(OSError):
                self._handle.close()
        self._handle = None
        for name in ("_temp", "_backup"):
            path = getattr(self, name)
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                setattr(self, name, None)


def _create_temp(target: Path, out: Output) -> Path:
    """A new hidden file beside `target`, created exclusively with mode 0666 (the umask applies)."""
    folder = target.parent
    stem = os.fsencode(target.name)[:_NAME_ROOM].decode(errors="ignore") or "output"
    for _ in range(100):
        temp = folder / f".{stem}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise FileInputError(
                out.shown, f"cannot write in its directory {printable(folder)} ({problem_of(exc)})", out.flag
            ) from None
        os.close(fd)
        return temp
    raise FileInputError(out.shown, "cannot find a free temporary name beside it", out.flag)


# checking ----------------------------------------------------------------------------------


def _stat_or_refuse(path: Path, shown: str, flag: str) -> os.stat_result | None:
    """The target's stat (links followed), None if it does not exist, or a one-line refusal."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            try:
                points = printable(os.readlink(path))
            except OSError:
                points = "?"
            raise FileInputError(
                shown,
                f"is a symbolic link to a missing file ({points}); remove the link or name a file",
                flag,
            ) from None
        return None
    except ValueError:
        raise FileInputError(shown, "is not a usable file name (it holds a NUL byte)", flag) from None
    except OSError as exc:
        raise FileInputError(shown, f"cannot be written ({problem_of(exc)})", flag) from None


FIFO_WAIT_S = 2.0  # how long a named pipe may take to get its reader before it is refused


def _open_fifo(path: Path, out: Output, wait_s: float = FIFO_WAIT_S) -> IO[bytes]:
    """A named pipe opened for writing now, or a one-line refusal when nobody reads it.

    A plain open() of a FIFO waits for a reader, forever if none comes (`--html pipe` with
    no `cat pipe`). Opened without blocking, it fails at once with ENXIO when no reader is
    there; the reader a shell starts beside the command may take a moment, so the open is
    retried for `wait_s`. The handle is kept until the commit writes to it: closing it now
    would hand the reader an end of file before the output.
    """
    import time

    deadline = time.monotonic() + wait_s
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(path, flags)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise out.failed(exc) from None
            if time.monotonic() >= deadline:
                raise out.failed(
                    f"is a named pipe (FIFO) with no reader after {wait_s:g} s; start the reader "
                    "first, or name a file"
                ) from None
            time.sleep(0.02)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISFIFO(mode):
        os.close(fd)
        raise out.failed("changed into something other than a FIFO; nothing written")
    import fcntl

    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "wb")


def _check_folder(folder: Path, shown: str, flag: str) -> None:
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise FileInputError(shown, f"its directory does not exist ({printable(folder)})", flag) from None
    except OSError as exc:
        raise FileInputError(shown, f"its directory cannot be used ({problem_of(exc)})", flag) from None
    if not stat.S_ISDIR(st.st_mode):
        raise FileInputError(shown, f"{printable(folder)} is not a directory", flag)
    refusal = _not_writable(st, folder, os.W_OK | os.X_OK)
    if refusal is not None:
        raise FileInputError(shown, f"its directory {printable(folder)} is {refusal}", flag)


def _std_fd(st: os.stat_result) -> int | None:
    """1 or 2 when `st` is the file standard output or error already points at."""
    for fd in (1, 2):
        try:
            if _same(os.fstat(fd), st):
                return fd
        except OSError:
            continue
    return None


def check_output(
    given: str | os.PathLike[str],
    flag: str,
    *,
    inputs: Iterable[tuple[str, str | os.PathLike[str]]] = (),
    overwrite: bool = True,
    force_hint: str = "pass --force to overwrite it",
) -> Output:
    """Everything that would make writing `given` fail or destroy something, checked now.

    `inputs` are (flag, path) of the files the command reads: an output that is one of them is
    refused. `overwrite=False` refuses an existing regular file (calibrate without --force).
    Nothing is created or changed, except a probe file created and removed in the target's
    directory (it finds a read-only file system or a full inode table before any work).
    """
    text = os.fspath(given)
    shown = printable(text)
    if text == STDOUT:
        return Output(text, flag, "fd", fd=1)
    if not text:
        raise FileInputError("''", "is not a file name", flag)
    path = Path(text).expanduser()
    st = _stat_or_refuse(path, shown, flag)
    out: Output
    if st is not None:
        _refuse_inputs(st, path, inputs, shown, flag)
        fd = _std_fd(st)
        mode = st.st_mode
        if fd is not None and not stat.S_ISDIR(mode):
            return Output(text, flag, "fd", fd=fd)
        if stat.S_ISDIR(mode):
            raise FileInputError(shown, "is a directory; give a file name", flag)
        if stat.S_ISFIFO(mode):
            out = Output(text, flag, "stream", target=path)
            out._handle = _open_fifo(path, out)
            return out
        if stat.S_ISCHR(mode):
            return Output(text, flag, "stream", target=path)
        if stat.S_ISBLK(mode):
            raise FileInputError(shown, "is a block device; refusing to write to it", flag)
        if not stat.S_ISREG(mode):
            raise FileInputError(shown, "is a socket or other special file; refusing to write to it", flag)
        if not overwrite:
            raise FileInputError(shown, f"already exists; {force_hint}", flag)
        refusal = _not_writable(st, path)
        if refusal is not None:
            raise FileInputError(shown, f"is {refusal}; refusing to replace it", flag)
        out = Output(text, flag, "file", target=Path(os.path.realpath(path)), keep=st)
    else:
        out = Output(text, flag, "file", target=Path(os.path.abspath(path)))
    assert out.target is not None
    _check_folder(out.target.parent, shown, flag)
    probe = _create_temp(out.target, out)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return out


def _refuse_inputs(
    st: os.stat_result,
    path: Path,
    inputs: Iterable[tuple[str, str | os.PathLike[str]]],
    shown: str,
    flag: str,
) -> None:
    for name, given in inputs:
        try:
            other = os.stat(given)
        except (OSError, ValueError):
            continue
        if _same(st, other) and not stat.S_ISDIR(other.st_mode):
            raise FileInputError(
                shown,
                f"is also an input of this command ({name} {printable(os.fspath(given))}); "
                "refusing to overwrite it: write the output to another file",
                flag,
            )


def refuse_inputs(out: Output, inputs: Iterable[tuple[str, str | os.PathLike[str]]]) -> None:
    """Check again once the inputs are known exactly (a folder given, the export found in it)."""
    if out.kind == "fd" and out.given == STDOUT:
        return
    try:
        st = os.stat(out.target if out.target is not None else out.given)
    except (OSError, ValueError):
        return  # a new file cannot be an existing input
    _refuse_inputs(st, Path(out.given), inputs, out.shown, out.flag)


def check_distinct(outputs: Sequence[Output | None]) -> list[Output]:
    """The outputs that are set, refusing two that name one file or one stream."""
    present = [o for o in outputs if o is not None]
    seen: list[tuple[Output, Any]] = []
    for out in present:
        if out.kind == "fd":
            key: Any = ("fd", out.fd)
        else:
            assert out.target is not None
            try:
                st = os.stat(out.target)
                key = ("inode", st.st_dev, st.st_ino)
            except OSError:
                key = ("path", os.path.realpath(out.target))
        for other, other_key in seen:
            if other_key == key:
                raise FileInputError(
                    out.shown, f"is the same output as {other.flag} {other.shown}; give two names", out.flag
                )
        seen.append((out, key))
    return present


# committing --------------------------------------------------------------------------------


# Sections a signal must not split (`_signals_held`), and what a handler asked to do meanwhile.
_held = 0
_deferred: list[Callable[[], None]] = []


def defer_while_held(action: Callable[[], None]) -> bool:
    """For a signal handler: inside a section that must not be split, keep `action` for the
    section's end and return True; outside one, return False (act now).

    Why both this and the signal mask: the mask holds a signal off the main thread only, and
    Linux then hands it to another thread (NumPy's, Arrow's), whose arrival still runs the
    Python handler in the main thread between two bytecodes of the section."""
    if _held:
        _deferred.append(action)
        return True
    return False


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT / SIGTERM / SIGHUP while creating a temporary file, renaming or cleaning up,
    so a signal never leaves a file this module does not know of or splits a commit in two."""
    global _held
    mask = getattr(signal, "pthread_sigmask", None)
    old = None
    if mask is not None:
        with contextlib.suppress(OSError, ValueError):
            old = mask(signal.SIG_BLOCK, _SIGNALS)
    main = threading.current_thread() is threading.main_thread()  # where handlers run
    _held += main
    try:
        yield
    finally:
        _held -= main
        if old is not None:
            mask(signal.SIG_SETMASK, old)  # type: ignore[misc]
        if main and not _held and _deferred:
            action = _deferred[0]
            _deferred.clear()
            action()  # the first signal's wish, now that the section is whole


def commit(outputs: Sequence[Output | None]) -> None:
    """Put every staged output in place, or none of the files.

    Streams are written first (after every file was staged complete and synced, so a failure
    to stage leaves them untouched); then the files are renamed, and a failed rename undoes
    the renames before it.
    """
    present = [o for o in outputs if o is not None]
    try:
        for out in present:
            if out.kind != "file":
                out._write_stream()
        with _signals_held():
            _rename_all([o for o in present if o.kind == "file" and o._temp is not None])
    finally:
        for out in present:
            out.discard()


def _rename_all(files: list[Output]) -> None:
    done: list[Output] = []
    for out in files:
        assert out.target is not None and out._temp is not None
        if len(files) > 1 and out.keep is not None:
            out._backup = out._temp.with_name(out._temp.name[: -len(TEMP_SUFFIX)] + ".old")
            try:
                os.link(out.target, out._backup)
            except OSError:
                out._backup = None  # no hard links here: this one cannot be undone
        try:
            os.replace(out._temp, out.target)
        except OSError as exc:
            _undo(done)
            raise out.failed(exc) from None
        out._temp = None
        done.append(out)
    for folder in dict.fromkeys(o.target.parent for o in done if o.target is not None):
        try:
            _fsync_dir(folder)
        except OSError as exc:
            raise done[0].failed(exc) from None


def _undo(done: list[Output]) -> None:
    for out in reversed(done):
        assert out.target is not None
        with contextlib.suppress(OSError):
            if out._backup is not None:
                os.replace(out._backup, out.target)
                out._backup = None
            elif out.keep is None:
                os.unlink(out.target)


@contextlib.contextmanager
def writing(*outputs: Output | None) -> Iterator[list[Output]]:
    """Stage inside the block; on leaving it normally everything is committed, on an
    exception (Ctrl-C and signals included) every temporary file is removed."""
    present = [o for o in outputs if o is not None]
    try:
        yield present
    except BaseException:
        for out in present:
            out.discard()
        raise
    commit(present)


def write_atomic(
    given: str | os.PathLike[str],
    data: bytes | str,
    flag: str = "output",
    *,
    inputs: Iterable[tuple[str, str | os.PathLike[str]]] = (),
    overwrite: bool = True,
) -> Output:
    """Check, stage and commit one output in a single call (text is written as UTF-8)."""
    out = check_output(given, flag, inputs=inputs, overwrite=overwrite)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with writing(out):
        out.stage(payload)
    return out


def scenario_inputs(models: Any = (), calibrations: Any = ()) -> list[tuple[str, str]]:
    """(flag, path) of the files scenarios read: a config.json (given, or its folder's) and
    calibration profiles. Outputs are checked against them, so no command overwrites what it
    reads. Names that are presets simply match no file."""

    def listed(value: Any) -> list[Any]:
        return [] if value is None else [value] if isinstance(value, str) else list(value)

    out: list[tuple[str, str]] = []
    for model in listed(models):
        if model:
            out += [("--model", str(model)), ("--model", os.path.join(str(model), "config.json"))]
    out += [("--calibration", str(c)) for c in listed(calibrations) if c]
    return out


def leftover_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """Temporary files of this module in `folder` (what a killed process may leave)."""
    return sorted(
        p for p in Path(folder).iterdir() if p.name.startswith(".") and p.name.endswith(TEMP_SUFFIX)
    )
