"""Read a packaged TOML table and validate its rows, reporting a bad row by name and field.

Parsing and validating every catalog costs a CLI run about as much as importing numpy, each
time (validation needs pydantic, whose import alone is most of that). So a packaged file is
kept the way Python keeps bytecode, in `__pycache__` beside the data:

- its parse, as a marshal file named by the hash of the text (an edited catalog misses);
- its validated rows, as a pickle named by the hash of the text *and* of the source of the
  modules that define the rows (`catalog/*.py`, `base/records.py`) and the tool's version, so
  a changed row class misses too. A pickle is only ever written by this module, after every
  row validated, into the package's own bytecode directory, and is trusted like the `.pyc`
  files beside it.

The hash is the import system's own (`importlib.util.source_hash`, the 64-bit key hash-based
`.pyc` files carry): what bytecode trusts is enough for its neighbours, and it needs no
`hashlib`, whose OpenSSL binding costs every start 4 ms.

Both are written atomically when that directory is writable and bytecode writing is on
(`PYTHONDONTWRITEBYTECODE` turns both off; `PYTHONPYCACHEPREFIX` moves both, as it moves the
`.pyc` files, for an install whose own directories are read-only), and are silently skipped
otherwise; a cache that cannot be read, or holds anything but the expected rows, only costs
the parse and validation.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import sys
from collections.abc import Callable
from functools import cache
from importlib.util import source_hash
from pathlib import Path
from typing import Any, TypeVar

from ..base.errors import CalcError
from ..base.records import Record, RecordError

M = TypeVar("M", bound=Record)

DATA = Path(__file__).parent / "data"  # the packaged catalogs, where an installed package has them


def packaged_text(filename: str) -> tuple[str, Any]:
    """The text of a file under catalog/data/, and where it lies (a Path when on disk)."""
    where: Any = DATA / filename
    if not where.is_file():  # not unpacked on disk (a zip import): ask the package's loader
        from importlib import resources  # it imports tempfile, shutil and zipfile: ~10 ms

        where = resources.files("deepep_calc.catalog").joinpath("data", filename)
    return where.read_text("utf-8"), where


def _cache_file(where: Any, text: str, kind: str = "marshal", salt: bytes = b"") -> Path | None:
    if not isinstance(where, Path):
        return None  # inside a zip or another loader: no directory to cache in
    digest = source_hash(text.encode("utf-8") + salt).hex()
    return _cache_dir(where.parent) / f"{where.name}.{digest}.{kind}"


def _cache_dir(data: Path) -> Path:
    """Where bytecode of a module in `data` would go: `__pycache__` beside it, or, when
    `PYTHONPYCACHEPREFIX` is set (the way to cache bytecode of a read-only install), the
    mirror of its absolute path under that prefix, as the import system does for `.pyc`."""
    if sys.pycache_prefix:
        absolute = data.resolve()
        return Path(sys.pycache_prefix) / absolute.relative_to(absolute.anchor)
    return data / "__pycache__"


@cache
def _code_digest() -> bytes:
    """Hash of the tool's version and of the source of every module that defines catalog rows
    (an install that ships no `.py` files still misses on a new version)."""
    from ..base.version import __version__

    parts = [__version__.encode()]
    here = Path(__file__).parent
    for path in (*sorted(here.glob("*.py")), here.parent / "base" / "records.py"):
        try:
            parts.append(path.read_bytes())
        except OSError:
            parts.append(path.name.encode())
    return source_hash(b"\0".join(parts))


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
    import tomllib  # only on a miss

    data = tomllib.loads(text)
    if cache_file is not None and not sys.dont_write_bytecode:
        with contextlib.suppress(ValueError):  # a type marshal cannot hold (a TOML date): no cache
            _write_cache(cache_file, marshal.dumps(data))
    return data


def _write_cache(cache_file: Path, blob: bytes) -> None:
    import tempfile  # only when writing: it imports random and shutil

    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=".tmp-", suffix=".marshal")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(tmp, cache_file)
        except BaseException:
            os.unlink(tmp)
            raise
        name, ext, _digest, kind = cache_file.name.split(".", 3)
        for old in cache_file.parent.glob(f"{name}.{ext}.*.{kind}"):  # stale digests
            if old != cache_file:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # read-only install, full disk: the parse is only slower


@cache
def read_data(filename: str) -> dict[str, Any]:
    """The parsed file, parsed once per process (callers never mutate it)."""
    return loads_packaged(*packaged_text(filename))


def validate_rows(filename: str, key: str, model: type[M]) -> dict[str, M]:
    """Every `[[key]]` row, validated, by name; a broken row is a packaging bug, named precisely."""
    return validated(filename, key, model, lambda: _rows(filename, key, model))


def validate_table(filename: str, model: type[M]) -> dict[str, M]:
    """Every top-level `[name]` table of the file, validated as one row each."""
    return validated(filename, "tables", model, lambda: _tables(filename, model))


def _rows(filename: str, key: str, model: type[M]) -> dict[str, M]:
    rows: dict[str, M] = {}
    for i, raw in enumerate(read_data(filename).get(key, [])):
        label = raw.get("name") or raw.get("id") or f"row {i + 1}"
        if label in rows:
            raise CalcError(f"catalog {filename}: duplicate {key} {label!r}")
        rows[label] = _one(model, raw, f"catalog {filename}: {key} {label!r}")
    return rows


def _tables(filename: str, model: type[M]) -> dict[str, M]:
    doc = read_data(filename)
    return {name: _one(model, raw, f"catalog {filename}: {name!r}") for name, raw in doc.items()}


def _one(model: type[M], raw: Any, where: str) -> M:
    try:
        return model.validate(raw)
    except RecordError as exc:
        raise CalcError(f"{where}: {exc}") from None


def validated(filename: str, part: str, model: type[M], build: Callable[[], dict[str, M]]) -> dict[str, M]:
    """`build()`, the validated `part` rows of a packaged file, through their pickle (module
    docstring): on a hit neither the TOML parser nor pydantic is imported."""
    text, where = packaged_text(filename)
    cache_file = _cache_file(where, text, f"{part}.pickle", _code_digest())
    if cache_file is not None:
        try:
            rows = pickle.loads(cache_file.read_bytes())
            if isinstance(rows, dict) and all(type(v) is model for v in rows.values()):
                return rows
        except Exception:  # any unreadable cache is only a miss
            pass
    rows = build()
    if cache_file is not None and not sys.dont_write_bytecode:
        _write_cache(cache_file, pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
    return rows
