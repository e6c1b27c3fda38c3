"""`catalog/hf/dtypes.py`: weight, routed-expert and KV dtypes from `torch_dtype` / `dtype` and
`quantization_config`, the same for every family (Llama 4 keeps its dtype under
`text_config`); which quantisation methods are accepted is one table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.base import Fields
from deepep_calc.catalog.hf.dtypes import QUANT_METHODS, TORCH_DTYPES, read_dtypes
from deepep_calc.catalog.models import DTYPE_BYTES
from one_line import assert_one_line

from .configs import _config, _error


def dtypes(data: dict[str, Any]) -> tuple[str, str | None, str]:
    return read_dtypes(Fields(data, "cfg.json", "fam"))


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


def test_the_first_dtype_declared_wins_top_level_before_text_config() -> None:
    """Asked in order: torch_dtype, dtype, text_config.torch_dtype, text_config.dtype."""
    assert dtypes({"torch_dtype": "float32", "dtype": "float16"}) == ("fp32", None, "fp32")
    assert dtypes({"dtype": "float16", "text_config": {"torch_dtype": "float32"}}) == ("fp16", None, "fp16")
    assert dtypes({"text_config": {"dtype": "float32"}}) == ("fp32", None, "fp32")
    assert dtypes({"text_config": "not an object"}) == ("bf16", None, "bf16")


def test_a_bad_nested_dtype_names_its_dotted_field() -> None:
    with pytest.raises(FileInputError) as info:
        dtypes({"text_config": {"torch_dtype": "float8"}})
    assert info.value.field == "text_config.torch_dtype"
    assert_one_line(info.value, "'text_config.torch_dtype' is \"float8\"", "bfloat16, float16, float32")


def test_fp8_quantises_every_weight_and_mxfp4_only_the_experts() -> None:
    """The KV cache keeps the checkpoint's own dtype either way."""
    fp8 = {"torch_dtype": "float16", "quantization_config": {"quant_method": "fp8"}}
    assert dtypes(fp8) == ("fp8", None, "fp16")
    mx = {"torch_dtype": "float16", "quantization_config": {"quant_method": "Mxfp4"}}
    assert dtypes(mx) == ("fp16", "mxfp4", "fp16")


def test_a_quantization_config_must_say_its_method() -> None:
    with pytest.raises(FileInputError) as info:
        dtypes({"quantization_config": {"bits": 4}})
    assert info.value.field == "quantization_config.quant_method"
    assert_one_line(info.value, "missing field 'quantization_config.quant_method'")


def test_every_dtype_named_is_one_the_model_can_size() -> None:
    """Each mapped dtype has a byte size in `catalog/models.py`, or a spec could not be built."""
    named = set(TORCH_DTYPES.values()) | {d for pair in QUANT_METHODS.values() for d in pair if d}
    assert named <= set(DTYPE_BYTES)
    assert set(QUANT_METHODS) == {m.lower() for m in QUANT_METHODS}  # looked up lower-case
