"""`catalog/hf/spec.py`: `model_type` picks the family's adapter, and what every family shares is
added once: the name and HF id, the context window, and schema validation as one line.

The fixtures of `tests/fixtures/hf/` are real config.json files, one or more per family; each
family's own reading is pinned in `test_<family>.py` beside this file.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.base.records import RecordError
from deepep_calc.catalog import hf as hf_config
from deepep_calc.catalog.hf import (
    SUPPORTED_MODEL_TYPES,
    spec_from_hf_dict,
)
from deepep_calc.catalog.hf import spec as spec_module
from deepep_calc.catalog.hf.spec import ADAPTERS, FAMILIES, validation_summary
from deepep_calc.io.hf_config import load_hf_config
from one_line import assert_one_line

from .configs import FIXTURE_NAMES, FIXTURES, _config, _error, _write

# ---------------------------------------------------------------- fixtures and names


def test_one_fixture_per_family() -> None:
    assert len(FIXTURE_NAMES) == 11
    families = {load_hf_config(FIXTURES / n).family for n in FIXTURE_NAMES}
    assert families == {
        "deepseek_v3",
        "kimi_k2",
        "deepseek_v2",
        "qwen3_moe",
        "qwen3_next",
        "mixtral",
        "gpt_oss",
        "llama4",
        "glm4_moe",
        "dbrx",
    }


def test_name_comes_from_folder_or_name_or_path(tmp_path: Path) -> None:
    assert load_hf_config(FIXTURES / "dbrx").name == "dbrx"
    declared = load_hf_config(FIXTURES / "qwen3-235b-a22b")
    assert declared.name == "Qwen/Qwen3-235B-A22B"
    assert declared.hf_id == "Qwen/Qwen3-235B-A22B"
    renamed = _write(tmp_path, _config("mixtral-8x7b"), "my-mixtral.json")
    spec = load_hf_config(renamed)
    assert spec.name == "my-mixtral" and spec.hf_id == ""
    local = _config("dbrx") | {"_name_or_path": "/data/models/dbrx"}
    assert spec_from_hf_dict(local, "test").hf_id == ""


def test_spec_from_dict_matches_file() -> None:
    d = _config("glm-4.5")
    spec = spec_from_hf_dict(d, source="uploaded", name="glm-upload")
    assert spec.name == "glm-upload" and spec.source == "uploaded"
    assert spec.as_dict(exclude={"name", "source"}) == load_hf_config(FIXTURES / "glm-4.5").as_dict(
        exclude={"name", "source"}
    )


def test_a_config_with_no_name_is_called_config_json_and_a_hostile_name_is_escaped() -> None:
    """The declared `_name_or_path` wins over the caller's name, which wins over "config.json";
    whatever is kept is one printable line of at most 200 characters."""
    d = _config("mixtral-8x7b")
    assert "_name_or_path" not in d
    assert spec_from_hf_dict(d, "t").name == "config.json"
    assert spec_from_hf_dict(d, "t", name="mine").name == "mine"
    assert spec_from_hf_dict(d | {"_name_or_path": "org/model"}, "t", name="mine").name == "org/model"
    hostile = spec_from_hf_dict(d | {"_name_or_path": "evil\x1b[2J\nname"}, "t")
    assert hostile.name == "evil\\x1b[2J name" and hostile.hf_id == ""
    assert spec_from_hf_dict(d | {"_name_or_path": "x" * 300}, "t").name == "x" * 200


def test_only_an_org_slash_name_is_taken_as_an_hf_id() -> None:
    d = _config("mixtral-8x7b")
    for declared, hf_id in [
        ("mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-v0.1"),
        ("./mixtral", ""),  # starts with a dot: a relative path
        ("/models/mixtral", ""),  # an absolute path
        ("a/b/c", ""),  # one slash only
        ("mixtral", ""),  # no organisation
    ]:
        assert spec_from_hf_dict(d | {"_name_or_path": declared}, "t").hf_id == hf_id, declared


# ---------------------------------------------------------------- the registry


def test_every_family_module_is_registered_and_the_list_is_sorted() -> None:
    """The supported types are exactly the family modules' `ADAPTERS` keys (the module
    docstrings of catalog/hf/ name eleven), listed in sorted order for the refusal line."""
    from_modules = {t for module in FAMILIES for t in module.ADAPTERS}
    assert set(ADAPTERS) == from_modules
    assert SUPPORTED_MODEL_TYPES == (
        "dbrx",
        "deepseek_v2",
        "deepseek_v3",
        "glm4_moe",
        "gpt_oss",
        "kimi_k2",
        "llama4",
        "llama4_text",
        "mixtral",
        "qwen3_moe",
        "qwen3_next",
    )


def test_a_model_type_claimed_by_two_modules_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepep_calc.catalog.hf import mixtral

    monkeypatch.setattr(spec_module, "FAMILIES", (mixtral, mixtral))
    with pytest.raises(RuntimeError, match="'mixtral' is claimed by two family modules"):
        spec_module._registry()


def test_a_text_only_llama4_export_is_recorded_as_llama4() -> None:
    text = copy.deepcopy(_config("llama4-maverick")["text_config"])
    assert text["model_type"] == "llama4_text"
    assert spec_from_hf_dict(text, "t").family == "llama4"


# ---------------------------------------------------------------- the context window


def test_the_context_window_is_the_first_one_declared() -> None:
    """`max_position_embeddings` (Mixtral: 32768), DBRX's `max_seq_len` (32768), Llama 4's under
    `text_config` (1048576); none declared is 0, which `check_context` reads as unknown."""
    mixtral = _config("mixtral-8x7b")
    assert spec_from_hf_dict(mixtral, "t").max_context == 32768
    assert spec_from_hf_dict(_config("dbrx"), "t").max_context == 32768
    assert spec_from_hf_dict(_config("llama4-maverick"), "t").max_context == 1048576
    # the top level is asked before text_config, max_position_embeddings before max_seq_len
    llama = _config("llama4-maverick") | {"max_position_embeddings": 4096}
    assert spec_from_hf_dict(llama, "t").max_context == 4096
    assert spec_from_hf_dict(mixtral | {"max_seq_len": 8}, "t").max_context == 32768
    del mixtral["max_position_embeddings"]
    assert spec_from_hf_dict(mixtral, "t").max_context == 0


def test_a_bad_context_window_names_its_field() -> None:
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(_config("mixtral-8x7b") | {"max_position_embeddings": "long"}, "t")
    assert_one_line(info.value, "max_position_embeddings", "must be an integer")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("data", [[1, 2], "mixtral", 3, None])
def test_json_not_an_object(tmp_path: Path, data: Any) -> None:
    assert_one_line(_error(tmp_path, data), "expected an object")


def test_unknown_model_type_lists_supported(tmp_path: Path) -> None:
    err = _error(tmp_path, {"model_type": "llama", "hidden_size": 4096})
    msg = assert_one_line(err, "model_type", '"llama"')
    assert err.field == "model_type"
    for family in SUPPORTED_MODEL_TYPES:
        assert family in msg


def test_missing_model_type(tmp_path: Path) -> None:
    err = _error(tmp_path, {"hidden_size": 4096})
    assert_one_line(err, "missing field 'model_type'")
    assert err.field == "model_type"


def test_missing_required_field_message(tmp_path: Path) -> None:
    d = _config("qwen3-30b-a3b-fp8")
    del d["num_experts_per_tok"]
    path = _write(tmp_path, d)
    with pytest.raises(FileInputError) as info:
        load_hf_config(path)
    assert info.value.message == f"{path}: missing field 'num_experts_per_tok' (qwen3_moe)"
    assert info.value.field == "num_experts_per_tok"
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert info.value.message == "config.json: missing field 'num_experts_per_tok' (qwen3_moe)"


def test_an_origin_with_a_line_break_stays_on_one_line() -> None:
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict({"hidden_size": 1}, "t", origin="two\nlines.json")
    assert info.value.message == "two lines.json: missing field 'model_type' (model_type)"


def test_schema_rule_becomes_one_line() -> None:
    """A rule only ModelSpec knows still comes out as one line naming the field."""
    fields = spec_from_hf_dict(_config("mixtral-8x7b"), "t").as_dict()
    fields["attention"]["kv_heads"] = 3
    with pytest.raises(FileInputError) as info:
        hf_config._build(fields, "cfg.json", "mixtral")
    assert_one_line(info.value, "cfg.json", "attention", "multiple of kv_heads")
    assert info.value.field == "attention"
    fields["attention"]["kv_heads"] = 8
    fields["topk"] = 99
    with pytest.raises(FileInputError) as info:
        hf_config._build(fields, "cfg.json", "mixtral")
    assert info.value.field == "topk"
    assert_one_line(info.value, "topk (99) exceeds experts (8)")


def test_validation_summary_names_the_field_of_a_rule_without_a_location() -> None:
    """A located problem keeps its location; a cross-field rule takes its first word when that
    is a ModelSpec field, else "model"; the message is collapsed onto one line."""
    assert validation_summary(RecordError("attention.heads", "bad")) == ("attention.heads", "bad")
    rule = RecordError("", "topk (9) exceeds experts (8)")
    assert validation_summary(rule) == ("topk", "topk (9) exceeds experts (8)")
    other = RecordError("", "something  odd\nhere")
    assert validation_summary(other) == ("model", "something odd here")
