"""The config.json fixtures of `tests/fixtures/hf/` and the checks every family's tests share.

One real config.json per family (two or three where a family has several shapes); a test edits
a parsed copy and hands it to the adapters, or writes it to `tmp_path` and loads it as a user
would (`io/hf_config.py: load_hf_config`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import CalcError, FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.io.hf_config import load_hf_config
from one_line import assert_one_line
from paths import TESTS

FIXTURES = TESTS / "fixtures" / "hf"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())

# Everything structural; name/hf_id/source/verified/stated params are provenance, not structure.
STRUCTURE = (
    "family",
    "hidden",
    "layers",
    "moe_layers",
    "experts",
    "shared_experts",
    "topk",
    "moe_intermediate",
    "shared_intermediate",
    "dense_intermediate",
    "vocab",
    "tie_embeddings",
    "weight_dtype",
    "expert_dtype",
    "kv_dtype",
)


def _config(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name / "config.json").read_text("utf-8"))


def _write(tmp_path: Path, data: Any, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), "utf-8")
    return path


def _error(tmp_path: Path, data: Any) -> CalcError:
    with pytest.raises(CalcError) as info:
        load_hf_config(_write(tmp_path, data))
    return info.value


def assert_maps_to_preset(name: str) -> None:
    """The fixture `name` reads as the preset of the same name, field for field."""
    spec = load_hf_config(FIXTURES / name)
    preset = load_models()[name]
    for field in STRUCTURE:
        assert getattr(spec, field) == getattr(preset, field), field
    assert spec.attention == preset.attention
    assert spec.verified is True


def assert_names_missing_field(fixture: str, key: str) -> None:
    """Without `key`, the fixture is refused in one line naming that field."""
    d = _config(fixture)
    del d[key]
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert_one_line(info.value, f"missing field '{key}'")
    assert info.value.field == key
