"""HF config.json adapters: each family maps to its preset, and every bad input is one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import CalcError, FileInputError
from deepep_calc.catalog import hf as hf_config
from deepep_calc.catalog.hf import (
    SUPPORTED_MODEL_TYPES,
    spec_from_hf_dict,
)
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


# ---------------------------------------------------------------- fixtures vs presets


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


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_maps_to_its_preset(name: str) -> None:
    spec = load_hf_config(FIXTURES / name)
    preset = load_models()[name]
    for field in STRUCTURE:
        assert getattr(spec, field) == getattr(preset, field), field
    assert spec.attention == preset.attention
    assert spec.verified is True


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_file_and_folder_give_the_same_spec(name: str) -> None:
    folder = load_hf_config(FIXTURES / name)
    file = load_hf_config(FIXTURES / name / "config.json")
    assert folder == file
    assert folder.source == f"config.json at {FIXTURES / name / 'config.json'}"


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


# ---------------------------------------------------------------- family-specific mapping


def test_quantisation_methods() -> None:
    v3 = spec_from_hf_dict(_config("deepseek-v3"), "t")
    assert (v3.weight_dtype, v3.expert_dtype, v3.kv_dtype) == ("fp8", None, "bf16")
    no_quant = _config("deepseek-v3")
    del no_quant["quantization_config"]
    assert spec_from_hf_dict(no_quant, "t").weight_dtype == "bf16"
    oss = spec_from_hf_dict(_config("gpt-oss-120b"), "t")
    assert (oss.weight_dtype, oss.expert_dtype, oss.routed_dtype) == ("bf16", "mxfp4", "mxfp4")
    upper = _config("qwen3-30b-a3b-fp8")
    upper["quantization_config"]["quant_method"] = "FP8"
    assert spec_from_hf_dict(upper, "t").weight_dtype == "fp8"


@pytest.mark.parametrize(
    ("raw", "weight", "kv"),
    [
        ("bfloat16", "bf16", "bf16"),
        ("float16", "fp16", "fp16"),
        ("float32", "fp32", "fp32"),
        ("torch.float16", "fp16", "fp16"),
        (None, "bf16", "bf16"),
    ],
)
def test_torch_dtype_mapping(raw: str | None, weight: str, kv: str) -> None:
    d = _config("mixtral-8x7b")
    d.pop("torch_dtype")
    if raw is not None:
        d["torch_dtype"] = raw
    spec = spec_from_hf_dict(d, "t")
    assert (spec.weight_dtype, spec.kv_dtype) == (weight, kv)


def test_newer_dtype_key_is_read() -> None:
    d = _config("mixtral-8x7b")
    d.pop("torch_dtype")
    d["dtype"] = "float16"
    assert spec_from_hf_dict(d, "t").weight_dtype == "fp16"


def test_qwen_dense_layers_from_mlp_only_and_sparse_step() -> None:
    d = _config("qwen3-30b-a3b-fp8")
    d["mlp_only_layers"] = [0, 1]
    assert spec_from_hf_dict(d, "t").moe_layers == 46
    d["mlp_only_layers"] = []
    d["decoder_sparse_step"] = 2
    spec = spec_from_hf_dict(d, "t")
    assert spec.moe_layers == 24 and spec.dense_intermediate == 6144


def test_qwen_sliding_window_when_enabled() -> None:
    d = _config("qwen3-30b-a3b-fp8") | {
        "use_sliding_window": True,
        "sliding_window": 4096,
        "max_window_layers": 28,
    }
    a = spec_from_hf_dict(d, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (4096, 20)


def test_qwen3_next_layer_types_override_interval() -> None:
    d = _config("qwen3-next-80b-a3b")
    d["layer_types"] = ["linear_attention" if i % 2 else "full_attention" for i in range(48)]
    a = spec_from_hf_dict(d, "t").attention
    assert a.linear_layers == 24
    assert a.linear_state_bytes == 32 * 128 * 128 * 4


def test_gpt_oss_without_layer_types_alternates() -> None:
    d = _config("gpt-oss-120b")
    del d["layer_types"]
    del d["num_experts_per_tok"]  # falls back to experts_per_token
    spec = spec_from_hf_dict(d, "t")
    assert spec.attention.sliding_layers == 18 and spec.topk == 4


def test_mixtral_head_dim_derived_when_absent() -> None:
    d = _config("mixtral-8x7b")
    assert "head_dim" not in d
    assert spec_from_hf_dict(d, "t").attention.head_dim == 4096 // 32
    d["hidden_size"] = 4100
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert_one_line(info.value, "head_dim", "not divisible")


def test_mixtral_sliding_window_covers_every_layer() -> None:
    d = _config("mixtral-8x7b") | {"sliding_window": 4096}
    a = spec_from_hf_dict(d, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (4096, 32)


def test_llama4_layouts() -> None:
    d = _config("llama4-maverick")
    d["text_config"]["no_rope_layers"] = [1, 1, 0, 0] * 12
    d["text_config"]["moe_layers"] = [1, 3, 5]
    spec = spec_from_hf_dict(d, "t")
    assert spec.attention.sliding_layers == 24 and spec.moe_layers == 3
    scout_like = _config("llama4-maverick")
    scout_like["text_config"].update(interleave_moe_layer_step=1, num_local_experts=16)
    scout = spec_from_hf_dict(scout_like, "t")
    preset = load_models()["llama4-scout"]
    assert (scout.moe_layers, scout.experts) == (preset.moe_layers, preset.experts)
    text_only = copy.deepcopy(d["text_config"])
    assert spec_from_hf_dict(text_only, "t").family == "llama4"


def test_deepseek_moe_layer_freq() -> None:
    d = _config("deepseek-v2-lite") | {"moe_layer_freq": 2}
    # layers 1..26, only even indices are MoE: 2, 4, ..., 26
    assert spec_from_hf_dict(d, "t").moe_layers == 13


def test_kimi_under_deepseek_v3_model_type() -> None:
    d = _config("kimi-k2") | {"model_type": "deepseek_v3"}
    spec = spec_from_hf_dict(d, "t")
    assert spec.family == "deepseek_v3" and spec.experts == 384 and spec.moe_layers == 60


@pytest.mark.parametrize("data", [[1, 2], "mixtral", 3, None])
def test_json_not_an_object(tmp_path: Path, data: Any) -> None:
    assert_one_line(_error(tmp_path, data), "expected an object")


# ---------------------------------------------------------------- content errors


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


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("deepseek-v3", "n_routed_experts"),
        ("kimi-k2", "kv_lora_rank"),
        ("deepseek-v2-lite", "qk_rope_head_dim"),
        ("qwen3-next-80b-a3b", "linear_num_value_heads"),
        ("mixtral-8x7b", "num_local_experts"),
        ("gpt-oss-120b", "num_local_experts"),
        ("glm-4.5", "moe_intermediate_size"),
        ("glm-4.5", "intermediate_size"),  # needed: the first 3 layers are dense
        ("dbrx", "d_model"),
        ("qwen3-235b-a22b", "vocab_size"),
        ("qwen3-235b-a22b", "head_dim"),  # HF's Qwen3 default (128) is not hidden / heads
        ("qwen3-235b-a22b", "num_key_value_heads"),
    ],
)
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    d = _config(fixture)
    del d[key]
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert_one_line(info.value, f"missing field '{key}'")
    assert info.value.field == key


@pytest.mark.parametrize(
    ("fixture", "path"),
    [
        ("llama4-maverick", ("text_config",)),
        ("llama4-maverick", ("text_config", "num_local_experts")),
        ("dbrx", ("ffn_config", "moe_top_k")),
        ("dbrx", ("attn_config", "kv_n_heads")),
        ("dbrx", ("attn_config",)),
        ("gpt-oss-120b", ("quantization_config", "quant_method")),
    ],
)
def test_nested_missing_field_names_dotted_path(fixture: str, path: tuple[str, ...]) -> None:
    d = _config(fixture)
    target = d
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    dotted = ".".join(path)
    assert_one_line(info.value, f"'{dotted}'")
    assert info.value.field == dotted


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("48", "must be an integer"),
        (48.0, "must be an integer"),
        (True, "must be an integer"),
        ([48], "must be an integer"),
        (0, "positive"),
        (-3, "positive"),
        (10**12, "implausibly large"),
    ],
)
def test_bad_numeric_value_names_field(tmp_path: Path, value: Any, needle: str) -> None:
    d = _config("mixtral-8x7b") | {"num_hidden_layers": value}
    err = _error(tmp_path, d)
    assert_one_line(err, "num_hidden_layers", needle)
    assert err.field == "num_hidden_layers"


def test_bad_nested_numeric_value(tmp_path: Path) -> None:
    d = _config("dbrx")
    d["ffn_config"]["moe_num_experts"] = "sixteen"
    err = _error(tmp_path, d)
    assert_one_line(err, "ffn_config.moe_num_experts", "must be an integer", '"sixteen"')


def test_huge_string_value_is_shortened(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"hidden_size": "x\n" * 10_000}
    msg = assert_one_line(_error(tmp_path, d), "hidden_size")
    assert len(msg) < 400


@pytest.mark.parametrize(
    ("fixture", "edit", "field"),
    [
        ("qwen3-30b-a3b-fp8", {"num_experts_per_tok": 129}, "num_experts_per_tok"),
        ("mixtral-8x7b", {"num_experts_per_tok": 9}, "num_experts_per_tok"),
        ("deepseek-v3", {"num_experts_per_tok": 257}, "num_experts_per_tok"),
    ],
)
def test_topk_above_experts(fixture: str, edit: dict[str, Any], field: str) -> None:
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(_config(fixture) | edit, "t")
    assert_one_line(info.value, field, "exceeds")
    assert info.value.field == field


def test_dbrx_topk_above_experts() -> None:
    d = _config("dbrx")
    d["ffn_config"]["moe_top_k"] = 17
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert_one_line(info.value, "ffn_config.moe_top_k", "exceeds the 16")


def test_unsupported_quant_method(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"quantization_config": {"quant_method": "awq", "bits": 4}}
    err = _error(tmp_path, d)
    assert_one_line(err, "quantization_config.quant_method", "awq", "fp8", "mxfp4")
    assert err.field == "quantization_config.quant_method"


def test_quantization_config_not_an_object(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"quantization_config": "fp8"}
    err = _error(tmp_path, d)
    assert_one_line(err, "quantization_config", "must be an object")


def test_unknown_torch_dtype(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"torch_dtype": "int3"}
    err = _error(tmp_path, d)
    assert_one_line(err, "torch_dtype", "int3", "bfloat16")
    assert err.field == "torch_dtype"


def test_kv_heads_not_dividing_heads(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"num_key_value_heads": 7}
    err = _error(tmp_path, d)
    assert_one_line(err, "num_key_value_heads", "multiple")


def test_no_moe_layer_left(tmp_path: Path) -> None:
    d = _config("deepseek-v2-lite") | {"first_k_dense_replace": 27}
    err = _error(tmp_path, d)
    assert_one_line(err, "first_k_dense_replace", "no MoE layer")


def test_layer_types_length_mismatch(tmp_path: Path) -> None:
    d = _config("gpt-oss-120b")
    d["layer_types"] = d["layer_types"][:10]
    err = _error(tmp_path, d)
    assert_one_line(err, "layer_types", "10 entries for 36 layers")


def test_bad_list_field(tmp_path: Path) -> None:
    d = _config("qwen3-30b-a3b-fp8") | {"mlp_only_layers": "0,1"}
    assert_one_line(_error(tmp_path, d), "mlp_only_layers", "list")


def test_bad_boolean(tmp_path: Path) -> None:
    d = _config("qwen3-30b-a3b-fp8") | {"tie_word_embeddings": "no"}
    assert_one_line(_error(tmp_path, d), "tie_word_embeddings", "true or false")


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
