"""`catalog/hf/deepseek.py`: DeepSeek-V2 / V3 and Kimi-K2 (one adapter, three `model_type`s):
MLA attention, a dense prefix, routed and shared experts."""

from __future__ import annotations

import pytest

from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.deepseek import ADAPTERS, deepseek

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["deepseek-v2-lite", "deepseek-v3", "kimi-k2"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("deepseek-v3", "n_routed_experts"),
        ("kimi-k2", "kv_lora_rank"),
        ("deepseek-v2-lite", "qk_rope_head_dim"),
    ],
)
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


def test_deepseek_moe_layer_freq() -> None:
    d = _config("deepseek-v2-lite") | {"moe_layer_freq": 2}
    # layers 1..26, only even indices are MoE: 2, 4, ..., 26
    assert spec_from_hf_dict(d, "t").moe_layers == 13


def test_kimi_under_deepseek_v3_model_type() -> None:
    d = _config("kimi-k2") | {"model_type": "deepseek_v3"}
    spec = spec_from_hf_dict(d, "t")
    assert spec.family == "deepseek_v3" and spec.experts == 384 and spec.moe_layers == 60


def test_one_adapter_reads_all_three_model_types() -> None:
    assert {"deepseek_v2": deepseek, "deepseek_v3": deepseek, "kimi_k2": deepseek} == ADAPTERS


def test_v2_lite_reads_as_its_config_says() -> None:
    """V2-Lite's config: 27 layers, the first dense (first_k_dense_replace 1) -> 26 MoE layers;
    two shared experts built as one MLP of moe_intermediate_size (1408); no q_lora_rank (null)."""
    spec = spec_from_hf_dict(_config("deepseek-v2-lite"), "t")
    assert (spec.layers, spec.moe_layers, spec.dense_intermediate) == (27, 26, 10944)
    assert (spec.shared_experts, spec.shared_intermediate) == (2, 1408)
    a = spec.attention
    assert (a.kind, a.heads, a.kv_heads, a.head_dim, a.q_lora_rank) == ("mla", 16, 16, 0, 0)
    assert (a.kv_lora_rank, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim) == (512, 64, 128, 128)


def test_without_a_dense_prefix_the_dense_size_is_optional() -> None:
    d = _config("deepseek-v2-lite") | {"first_k_dense_replace": 0, "n_shared_experts": 0}
    del d["intermediate_size"]
    spec = spec_from_hf_dict(d, "t")
    assert (spec.moe_layers, spec.dense_intermediate) == (27, 0)
    assert (spec.shared_experts, spec.shared_intermediate) == (0, 0)
