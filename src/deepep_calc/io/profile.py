"""The calibration profile as a file, both ways: its bytes read and written, its inputs fingerprinted.

A profile is a TOML file written by `deepep-calc calibrate` and read by `--calibration FILE`.
This module holds what touches the disk: reading the text (bounded, one-line errors) into a
checked profile (`load_profile`), the sha256 fingerprint of every input file and the check that
the inputs found again are the ones recorded, and the atomic write (the document's TOML text is
`calibrate/profile.py`'s).
What a profile must hold (parsing, its schema and every check on its values) is the fit's:
`fit/profile_records.py` and `fit/profile.py`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import FileInputError
from .textfile import read_text_file, stat_path

if TYPE_CHECKING:
    from ..fit.profile_records import Profile


def fingerprint(path: Path) -> tuple[str, int]:
    """sha256 and size of a file, read in chunks (a profile records exactly what it rests on)."""
    import hashlib  # only for a profile: its OpenSSL binding is 4 ms of every start

    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def read_profile_text(path: str | Path, max_bytes: int) -> tuple[Path, str]:
    """The profile's resolved path and its text; one-line errors otherwise. Symlinks are followed."""
    p = Path(path).expanduser()
    try:
        p.stat()
    except FileNotFoundError:
        dangling = "; it is a symbolic link to a missing target" if p.is_symlink() else ""
        raise FileInputError(
            p, f"no such file (expected a profile written by `deepep-calc calibrate`){dangling}"
        ) from None
    except (OSError, ValueError):
        stat_path(p)  # raises the one-line reason (symlink loop, bad name, permission)
        raise
    if p.is_dir():
        raise FileInputError(p, "is a directory; expected a calibration profile (.toml)")
    text = read_text_file(p, max_bytes)
    return p.resolve(), text


def load_profile(path: str | Path) -> Profile:
    """Read a profile (parsed once per name and content, `fit.profile.parse_profile`); one-line
    errors otherwise. Symbolic links are followed; the inputs it records that can be found again
    must still be the files it was fitted to (`verify_inputs`)."""
    from ..fit.profile import parse_profile
    from ..fit.profile_records import MAX_PROFILE_BYTES

    where, text = read_profile_text(path, MAX_PROFILE_BYTES)
    profile = parse_profile(where.name, text, str(path))
    verify_inputs(profile, where.parent)
    return profile


def write_text_atomic(path: Path, text: str, force: bool) -> None:
    """Write a profile's text by the safe-write rules (`io/safe_write.py`): never half a profile."""
    from .safe_write import write_atomic

    write_atomic(path, text, "-o", overwrite=force)


def verify_inputs(profile: Profile, folder: Path) -> None:
    """Check the recorded fingerprint of every input that can be found again.

    A profile's measured cells are only as good as the files they were read from. When such a
    file is present again (at its recorded path, or beside the profile) with other contents,
    the profile no longer describes it: refuse, naming the file, rather than replay stale
    measurements as "measured". Files that are gone are fine: profiles travel without inputs.
    """
    for item in profile.inputs:
        recorded = Path(item.path)
        places = (
            [recorded] if recorded.is_absolute() else [recorded, folder / recorded, folder / recorded.name]
        )
        seen: list[tuple[Path, str]] = []
        for place in dict.fromkeys(places):
            found = _fingerprint_if_file(place)
            if found is None:
                continue
            if found == (item.sha256, item.size_bytes):
                seen = []
                break
            seen.append((place, found[0]))
        if seen:
            place, digest = seen[0]
            raise FileInputError(
                profile._name or "the profile",
                f"its {item.role} input {place} has changed since calibration (sha256 "
                f"{item.sha256[:12]}... recorded, {digest[:12]}... now): re-run deepep-calc calibrate "
                "on the current files, or restore the originals",
                field="inputs",
            )


@lru_cache(maxsize=256)
def _fingerprint_cached(path: str, mtime_ns: int, size: int) -> tuple[str, int]:
    return fingerprint(Path(path))


def _fingerprint_if_file(path: Path) -> tuple[str, int] | None:
    """sha256 and size of a regular file (cached by path, mtime and size), else None."""
    try:
        st = path.stat()
        if not path.is_file():
            return None
        return _fingerprint_cached(str(path.resolve()), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        return None
