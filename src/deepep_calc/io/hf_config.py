"""Read a config.json (or the folder holding one) from disk, bounded and with one-line errors.

Why a module of its own: the file half (size cap before reading, symlinks followed as HF caches
use them, UTF-8 and JSON failures each in a plain sentence) is independent of which family the
config describes; the catalog's `hf/spec.py` turns the parsed dict into a `ModelSpec`.
`resolve_model` is `--model`: a preset by name or HF id (`catalog/model_catalog.py:
find_model`), else a config.json read here.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.model_catalog import find_model
from deepep_calc.catalog.models import ModelSpec
from deepep_calc.io.textfile import one_line

# The family adapters (`catalog/hf/`) are imported by the functions that read a config.json:
# a preset never needs them.


def _read_json(file: Path) -> Any:
    """Bounded, decoded, parsed: each failure mode gets its own plain sentence."""
    from deepep_calc.catalog.hf.base import MAX_CONFIG_BYTES

    shown = one_line(str(file))
    try:
        size = file.stat().st_size
    except OSError as err:
        raise FileInputError(
            shown, f"cannot be read ({one_line(err.strerror or str(err))})", field="path"
        ) from None
    if size > MAX_CONFIG_BYTES:
        raise FileInputError(
            shown, f"is {size:,} bytes; a config.json over 5 MB is refused unread", field="path"
        )
    try:
        with file.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise FileInputError(
            shown, f"cannot be read ({one_line(err.strerror or str(err))})", field="path"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise FileInputError(shown, "is larger than 5 MB; refused", field="path")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise FileInputError(
            shown, f"is not UTF-8 text (invalid byte at offset {err.start})", field="path"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FileInputError(
            shown,
            f"is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})",
            field="path",
        ) from None
    except RecursionError:
        raise FileInputError(shown, "is not valid JSON (nested too deeply)", field="path") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(
            shown, "is not valid JSON (a number with thousands of digits)", field="path"
        ) from None


def load_hf_config(path: str | Path) -> ModelSpec:
    """Load a config.json (or a folder holding one) as a verified `ModelSpec`."""
    given = Path(path).expanduser()
    shown = one_line(str(given))
    try:
        given.stat()  # follows symlinks: HF cache snapshots are links into blobs/
    except (OSError, ValueError) as err:
        if isinstance(err, OSError) and err.errno == errno.ELOOP:
            raise FileInputError(shown, "is a symbolic link loop", field="path") from None
        if isinstance(err, OSError) and not isinstance(err, FileNotFoundError):
            raise FileInputError(
                shown, f"cannot be read ({one_line(err.strerror or str(err))})", field="path"
            ) from None
        dangling = " (a symbolic link to a missing target)" if given.is_symlink() else ""
        raise FileInputError(shown, f"no such file or folder{dangling}", field="path") from None
    if given.is_dir():
        file = given / "config.json"
        if not file.exists():
            raise FileInputError(shown, "folder has no config.json", field="path")
        fallback = given.resolve().name
    else:
        file = given
        fallback = given.resolve().parent.name if given.name == "config.json" else given.stem
    if not file.is_file():
        raise FileInputError(one_line(str(file)), "is not a regular file", field="path")
    data = _read_json(file)
    from deepep_calc.catalog.hf.spec import spec_from_hf_dict

    where = one_line(str(file))
    return spec_from_hf_dict(data, source=f"config.json at {where}", name=fallback, origin=where)


def resolve_model(name_or_path: str) -> ModelSpec:
    """A preset name (any case), a preset's HF id, or a path to a config.json or its folder."""
    spec = find_model(name_or_path)
    return spec if spec is not None else load_hf_config(name_or_path.strip())
