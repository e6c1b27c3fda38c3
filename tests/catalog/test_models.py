"""`catalog/models.py`: the `ModelSpec` the physics consumes and the bytes of each dtype. The
schema's own rules are pinned here on a tiny hand-made model (two layers, four experts); the
presets built from it are `test_model_catalog.py`'s."""

from __future__ import annotations

from typing import Any

import pytest

from deepep_calc.base.records import RecordError
from deepep_calc.catalog.models import DTYPE_BYTES, DTYPES, Attention, ModelSpec

GQA = {"kind": "gqa", "heads": 4, "kv_heads": 2, "head_dim": 16}
TINY = {
    "name": "tiny",
    "family": "mixtral",
    "source": "test",
    "hidden": 64,
    "layers": 2,
    "moe_layers": 2,
    "experts": 4,
    "topk": 2,
    "moe_intermediate": 128,
    "vocab": 1000,
    "attention": GQA,
}


def spec(**update: Any) -> ModelSpec:
    return ModelSpec.validate({**TINY, **update})


def problem(**update: Any) -> tuple[str, str]:
    with pytest.raises(RecordError) as info:
        spec(**update)
    return info.value.loc, info.value.msg


def test_dtype_bytes_include_the_block_scales() -> None:
    """FP8 block-128: one fp32 scale per 128 x 128 block, 1 + 4 / 16384 bytes; MXFP4: 4 bits plus
    an 8-bit scale per 32 values, (4 + 8/32) / 8; NVFP4: an 8-bit scale per 16, (4 + 8/16) / 8;
    INT4: half a byte plus 2 bytes per 128."""
    assert DTYPE_BYTES == {
        "fp32": 4.0,
        "bf16": 2.0,
        "fp16": 2.0,
        "fp8": 1.000244140625,
        "int8": 1.0,
        "mxfp4": 0.53125,
        "nvfp4": 0.5625,
        "int4": 0.515625,
    }
    assert tuple(DTYPE_BYTES) == DTYPES


def test_a_tiny_model_validates_with_its_defaults() -> None:
    m = spec()
    assert (m.weight_dtype, m.expert_dtype, m.kv_dtype, m.max_context) == ("bf16", None, "bf16", 0)
    assert (m.shared_experts, m.shared_intermediate, m.dense_intermediate) == (0, 0, 0)
    assert (m.dense_layers, m.routed_dtype) == (0, "bf16")
    assert m.verified is True and m.hf_id == ""


def test_dense_layers_and_routed_dtype_are_derived() -> None:
    m = spec(layers=5, moe_layers=3, dense_intermediate=256, weight_dtype="fp8", expert_dtype="mxfp4")
    assert (m.dense_layers, m.routed_dtype) == (2, "mxfp4")
    assert spec(weight_dtype="fp8").routed_dtype == "fp8"  # no expert dtype: the weights'


@pytest.mark.parametrize(
    ("update", "msg"),
    [
        ({"moe_layers": 3}, "moe_layers (3) exceeds layers (2)"),
        ({"topk": 5}, "topk (5) exceeds experts (4)"),
        ({"moe_layers": 1}, "dense layers present but dense_intermediate is 0"),
        ({"shared_experts": 1}, "shared_experts given but shared_intermediate is 0"),
        ({"weight_dtype": "fp6"}, "weight_dtype 'fp6' is not one of " + ", ".join(DTYPES)),
        ({"expert_dtype": "x"}, "expert_dtype 'x' is not one of " + ", ".join(DTYPES)),
        ({"kv_dtype": "fp6"}, "kv_dtype 'fp6' is not one of " + ", ".join(DTYPES)),
        (
            {"attention": {**GQA, "sliding_window": 8, "sliding_layers": 2, "linear_layers": 1}},
            "sliding_layers + linear_layers exceed layers",
        ),
        (
            {"checkpoints": {"fp6": "org/m"}, "checkpoints_source": "s"},
            "checkpoints: 'fp6' is not one of " + ", ".join(DTYPES),
        ),
        ({"checkpoints": {"fp8": "org/m"}}, "checkpoints given without checkpoints_source"),
    ],
)
def test_a_cross_field_rule_is_a_message_without_a_location(update: dict[str, Any], msg: str) -> None:
    assert problem(**update) == ("", msg)


@pytest.mark.parametrize(
    ("attention", "msg"),
    [
        ({**GQA, "kind": "mla"}, "MLA attention needs kv_lora_rank and qk_rope_head_dim > 0"),
        ({**GQA, "head_dim": 0}, "GQA attention needs head_dim > 0"),
        ({**GQA, "kv_heads": 3}, "heads (4) must be a multiple of kv_heads (3)"),
        ({**GQA, "sliding_layers": 1}, "sliding_layers given without sliding_window"),
    ],
)
def test_attention_rules_are_located_at_attention(attention: dict[str, Any], msg: str) -> None:
    assert problem(attention=attention) == ("attention", msg)


def test_field_bounds_and_unknown_fields_are_located() -> None:
    assert problem(hidden=0)[0] == "hidden"
    assert problem(moe_layers=-1)[0] == "moe_layers"
    assert problem(colour="red") == ("colour", "Unexpected keyword argument")


def test_mla_attention_needs_no_head_dim() -> None:
    mla = Attention(kind="mla", heads=128, kv_heads=128, head_dim=0, kv_lora_rank=512, qk_rope_head_dim=64)
    assert spec(attention=mla.as_dict()).attention == mla


def test_checkpoints_document_and_do_not_take_part_in_equality() -> None:
    """Two specs that differ only in where other dtypes are published are one network."""
    plain = spec()
    documented = spec(checkpoints={"fp8": "org/tiny-fp8"}, checkpoints_source="model card")
    assert documented == plain and hash(documented) == hash(plain)
    assert spec(hidden=128) != plain


def test_a_copy_runs_the_rules_again() -> None:
    with pytest.raises(ValueError, match=r"topk \(9\) exceeds experts \(4\)"):
        spec().copy(topk=9)
