"""The MoE model presets, and the one place that turns `--model` into a `ModelSpec`.

Presets live in `data/models.toml` so that adding a model is a table, not code. Every row is
validated when the catalog is first read: a broken row is a packaging bug and is reported
with the preset and field, instead of surfacing later as a wrong number.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deepep_calc.catalog.hf_config import load_hf_config, validation_summary
from deepep_calc.catalog.models import ModelSpec
from deepep_calc.errors import CalcError, InputError

MODELS_FILE = "models.toml"


def parse_models(text: str, origin: str = MODELS_FILE) -> dict[str, ModelSpec]:
    """Validate TOML text holding `[[model]]` rows; keys are lower-case preset names, in order."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CalcError(f"catalog {origin}: not valid TOML ({err})") from None
    rows = data.get("model", [])
    if not isinstance(rows, list):
        raise CalcError(f"catalog {origin}: 'model' must be an array of [[model]] tables")
    models: dict[str, ModelSpec] = {}
    for i, raw in enumerate(rows):
        key, spec = _parse_row(raw, i, origin, models)
        models[key] = spec
    return models


def _parse_row(raw: Any, index: int, origin: str, seen: dict[str, ModelSpec]) -> tuple[str, ModelSpec]:
    """One row: its label (for messages) is the name if it has a usable one, else its position."""
    name = raw.get("name") if isinstance(raw, dict) else None
    label = name if isinstance(name, str) and name else f"row {index + 1}"
    if not isinstance(raw, dict):
        raise CalcError(f"catalog {origin}: model {label!r}: not a table", field="model")
    try:
        spec = ModelSpec.model_validate(raw)
    except ValidationError as err:
        loc, msg = validation_summary(err)
        raise CalcError(f"catalog {origin}: model {label!r}: field '{loc}': {msg}", loc) from None
    key = spec.name.lower()
    if key != spec.name or not key.strip() or any(c.isspace() for c in key):
        raise CalcError(
            f"catalog {origin}: model {label!r}: field 'name' must be lower-case with no spaces",
            "name",
        )
    if key in seen:
        raise CalcError(f"catalog {origin}: model {label!r} is listed twice", "name")
    return key, spec


@lru_cache(maxsize=1)
def _packaged_models() -> dict[str, ModelSpec]:
    text = resources.files("deepep_calc.catalog").joinpath("data", MODELS_FILE).read_text("utf-8")
    return parse_models(text)


def load_models() -> dict[str, ModelSpec]:
    """All presets by name. The parse is cached; each caller gets its own dict to mutate."""
    return dict(_packaged_models())


def preset_names() -> list[str]:
    """Preset names in catalog order (the order the CLI and page list them)."""
    return list(_packaged_models())


def _looks_like_path(text: str) -> bool:
    if "/" in text or "\\" in text or text.lower().endswith(".json"):
        return True
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):  # e.g. an embedded NUL byte
        return False


def resolve_model(name_or_path: str) -> ModelSpec:
    """A preset name (any case), a preset's HF id, or a path to a config.json or its folder.

    Preset names win over same-named folders in the working directory: `--model dbrx` should
    mean the same thing wherever it is typed. An HF id only counts when nothing of that name
    exists on disk, so a local `org/name/config.json` is still read as a file.
    """
    text = name_or_path.strip()
    models = _packaged_models()
    if text.lower() in models:
        return models[text.lower()]
    if text and _looks_like_path(text):
        try:
            on_disk = Path(text).expanduser().exists()
        except (OSError, ValueError):
            on_disk = False
        if not on_disk:
            for spec in models.values():
                if spec.hf_id and spec.hf_id.lower() == text.lower():
                    return spec
        return load_hf_config(text)
    raise InputError("--model", name_or_path, f"a preset ({', '.join(models)}) or a path to a config.json")
