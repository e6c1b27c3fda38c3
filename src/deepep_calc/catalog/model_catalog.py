"""The MoE model presets, and the one place that turns `--model` into a `ModelSpec`.

Presets live in `data/models.toml` so that adding a model is a table, not code. Every row is
validated when the catalog is first read: a broken row is a packaging bug and is reported
with the preset and field, instead of surfacing later as a wrong number.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.base.records import RecordError
from deepep_calc.catalog._toml import loads_packaged, packaged_text, validated
from deepep_calc.catalog.models import ModelSpec

MODELS_FILE = "models.toml"


def parse_models(text: str, origin: str = MODELS_FILE, where: Any = None) -> dict[str, ModelSpec]:
    """Validate TOML text holding `[[model]]` rows; keys are lower-case preset names, in order.

    `where`: the packaged file the text was read from, whose parse may be cached (`_toml`)."""
    import tomllib

    try:
        data = tomllib.loads(text) if where is None else loads_packaged(text, where)
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
        spec = ModelSpec.validate(raw)
    except RecordError as err:
        from deepep_calc.catalog.hf import validation_summary  # the config.json reader: on demand

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
    def build() -> dict[str, ModelSpec]:
        text, where = packaged_text(MODELS_FILE)
        return parse_models(text, where=where)

    return validated(MODELS_FILE, "model", ModelSpec, build)


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


def find_model(name_or_path: str) -> ModelSpec | None:
    """The preset a name (any case) or a preset's HF id names; None for a path to a config.json.

    Preset names win over same-named folders in the working directory: `--model dbrx` should
    mean the same thing wherever it is typed. An HF id only counts when nothing of that name
    exists on disk, so a local `org/name/config.json` is still read as a file. A path is read by
    `io/hf_config.py: resolve_model` (the catalog reads no user file); text that is neither is
    refused here, naming --model.
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
        return None
    raise InputError("--model", name_or_path, f"a preset ({', '.join(models)}) or a path to a config.json")


# Fields that name or document a model rather than shape it: two specs that differ only here
# are the same network, so they run at the same speed and share measured cells. The context
# window is excluded too: a RoPE-scaled copy of a checkpoint serves the same tokens as fast.
_NOT_ARCHITECTURE = frozenset(
    {
        "name",
        "hf_id",
        "source",
        "verified",
        "stated_total_params_b",
        "stated_active_params_b",
        "max_context",
        "checkpoints",
        "checkpoints_source",
    }
)


def architecture(spec: ModelSpec) -> dict[str, Any]:
    """What makes two models the same network: shape, attention layout and dtypes."""
    return spec.as_dict(exclude=_NOT_ARCHITECTURE)


@lru_cache(maxsize=256)
def preset_twin(spec: ModelSpec) -> str | None:
    """The preset `spec` is architecturally identical to, or None.

    A user's config.json of a calibrated checkpoint is recognised by its structure, not its
    name; when several presets share a structure (DeepSeek-V3 and R1), the one whose HF id or
    name the config declares wins, else the first in catalog order.
    """
    shape = architecture(spec)
    twins = [name for name, p in _packaged_models().items() if architecture(p) == shape]
    if not twins:
        return None
    declared = {spec.hf_id.lower(), spec.name.lower()} - {""}
    for name in twins:
        p = _packaged_models()[name]
        if name in declared or p.hf_id.lower() in declared:
            return name
    return twins[0]


def namesake_difference(spec: ModelSpec) -> tuple[str, list[str]] | None:
    """The preset a config names (by HF id or name) and the architecture fields it differs in.

    None when the config names no preset or is architecturally that preset. This is how the
    tool says why a config that claims to be a calibrated model does not get its cells.
    """
    declared = {spec.hf_id.lower(), spec.name.lower()} - {""}
    for name, p in _packaged_models().items():
        if name in declared or (p.hf_id and p.hf_id.lower() in declared):
            mine, theirs = _flat(architecture(spec)), _flat(architecture(p))
            diff = [f"{k} {mine.get(k)!r} vs {v!r}" for k, v in theirs.items() if mine.get(k) != v]
            return (name, diff) if diff else None
    return None


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out
