"""Read a packaged TOML table and validate its rows, reporting a bad row by name and field.

Parsing every catalog costs a CLI run about as much as a tenth of importing numpy, each time. So a
packaged file's parse is kept the way Python keeps bytecode: a marshal file in `__pycache__`
beside the data, named by the SHA-256 of the text it came from (an edited catalog misses and is
parsed afresh), written atomically when that directory is writable and bytecode writing is on
(`PYTHONDONTWRITEBYTECODE` turns both off), and silently skipped otherwise.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.errors import CalcError

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)
else:
    M = TypeVar("M")


def packaged_text(filename: str) -> tuple[str, Any]:
    """The text of a file under catalog/data/, and where it lies (a Path when on disk)."""
    where = resources.files("deepep_calc.catalog").joinpath("data", filename)
    return where.read_text("utf-8"), where


def _cache_file(where: Any, text: str) -> Path | None:
    if not isinstance(where, Path):
        return None  # inside a zip or another loader: no directory to cache in
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    return where.parent / "__pycache__" / f"{where.name}.{digest}.marshal"


def loads_packaged(text: str, where: Any) -> dict[str, Any]:
    """`tomllib.loads(text)` of a packaged file, through the marshal cache (module docstring).

    The cached document equals a fresh parse: marshal round-trips dicts, lists, strings,
    numbers and booleans exactly, and a document holding anything else is never cached.
    """
    cache_file = _cache_file(where, text)
    if cache_file is not None:
        try:
            data = marshal.loads(cache_file.read_bytes())
            if isinstance(data, dict):
                return data
        except (OSError, ValueError, EOFError, TypeError):
            pass
    data = tomllib.loads(text)
    if cache_file is not None and not sys.dont_write_bytecode:
        _write_cache(cache_file, data)
    return data


def _write_cache(cache_file: Path, data: dict[str, Any]) -> None:
    import tempfile  # only when writing: it imports random and shutil

    try:
        blob = marshal.dumps(data)
    except ValueError:  # a type marshal cannot hold (a TOML date): parse it every time
        return
    try:
        cache_file.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=".tmp-", suffix=".marshal")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(tmp, cache_file)
        except BaseException:
            os.unlink(tmp)
            raise
        stem = cache_file.name.split(".", 2)
        for old in cache_file.parent.glob(f"{stem[0]}.{stem[1]}.*.marshal"):  # stale digests
            if old != cache_file:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # read-only install, full disk: the parse is only slower


@cache
def read_data(filename: str) -> dict[str, Any]:
    """The parsed file, parsed once per process (callers never mutate it)."""
    return loads_packaged(*packaged_text(filename))


def validate_rows(filename: str, key: str, model: type[M]) -> dict[str, M]:
    """Validate every `[[key]]` row; a broken row is a packaging bug, named precisely."""
    from pydantic import ValidationError

    rows: dict[str, M] = {}
    for i, raw in enumerate(read_data(filename).get(key, [])):
        label = raw.get("name") or raw.get("id") or f"row {i + 1}"
        try:
            row = model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise CalcError(f"catalog {filename}: {key} {label!r}: {loc}: {err['msg']}") from None
        if label in rows:
            raise CalcError(f"catalog {filename}: duplicate {key} {label!r}")
        rows[label] = row
    return rows
