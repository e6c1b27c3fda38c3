"""Read a packaged TOML table and validate its rows, reporting a bad row by name and field."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import CalcError

M = TypeVar("M", bound=BaseModel)


@cache
def read_data(filename: str) -> dict[str, Any]:
    """The parsed file, parsed once per process (callers never mutate it)."""
    text = resources.files("deepep_calc.catalog").joinpath("data", filename).read_text("utf-8")
    return tomllib.loads(text)


def validate_rows(filename: str, key: str, model: type[M]) -> dict[str, M]:
    """Validate every `[[key]]` row; a broken row is a packaging bug, named precisely."""
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
