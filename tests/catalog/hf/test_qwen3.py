"""`catalog/hf/qwen3.py`: Qwen3-MoE and Qwen3-Next, one layout rule (`decoder_sparse_step`,
`mlp_only_layers`) and two attention kinds (Qwen3-Next adds Gated DeltaNet layers)."""

from __future__ import annotations

import pytest

from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.qwen3 import ADAPTERS, qwen3_moe, qwen3_next

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["qwen3-235b-a22b", "qwen3-30b-a3b-fp8", "qwen3-next-80b-a3b"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("qwen3-next-80b-a3b", "linear_num_value_heads"),
        ("qwen3-235b-a22b", "vocab_size"),
        ("qwen3-235b-a22b", "head_dim"),  # HF's Qwen3 default (128) is not hidden / heads
        ("qwen3-235b-a22b", "num_key_value_heads"),
    ],
)
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


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


def test_the_two_model_types_have_their_own_adapters() -> None:
    assert {"qwen3_moe": qwen3_moe, "qwen3_next": qwen3_next} == ADAPTERS


def test_a_window_stays_off_unless_use_sliding_window_says_so() -> None:
    """Released Qwen3-MoE configs state a window with `use_sliding_window: false`."""
    d = _config("qwen3-30b-a3b-fp8") | {"use_sliding_window": False, "sliding_window": 4096}
    a = spec_from_hf_dict(d, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (0, 0)


def test_qwen3_next_linear_layers_from_the_interval_and_their_weights() -> None:
    """Every 4th of 48 layers is full attention, so 36 are linear. With hidden 2048, 16 key
    heads and 32 value heads of 128: in_proj_qkvz 2048 x (2*16*128 + 2*32*128) = 25,165,824,
    in_proj_ba 2048 x 64 = 131,072, out_proj 32*128 x 2048 = 8,388,608."""
    spec = spec_from_hf_dict(_config("qwen3-next-80b-a3b"), "t")
    a = spec.attention
    assert a.linear_layers == 36
    assert a.linear_params == 25_165_824 + 131_072 + 8_388_608
    assert (spec.shared_experts, spec.shared_intermediate) == (1, 512)


def test_qwen3_next_with_every_layer_full_needs_no_linear_fields() -> None:
    d = _config("qwen3-next-80b-a3b") | {"full_attention_interval": 1}
    del d["linear_num_value_heads"]
    a = spec_from_hf_dict(d, "t").attention
    assert (a.linear_layers, a.linear_state_bytes, a.linear_params) == (0, 0, 0)
