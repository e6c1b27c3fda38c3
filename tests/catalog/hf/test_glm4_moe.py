"""`catalog/hf/glm4_moe.py`: GLM-4.5, DeepSeek's layout (a dense prefix, a shared expert) with
grouped-query attention."""

from __future__ import annotations

import pytest

from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.glm4_moe import ADAPTERS, glm4_moe

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["glm-4.5"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("glm-4.5", "moe_intermediate_size"),
        ("glm-4.5", "intermediate_size"),  # needed: the first 3 layers are dense
    ],
)
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


def test_the_adapter_and_its_model_type() -> None:
    assert {"glm4_moe": glm4_moe} == ADAPTERS


def test_the_dense_prefix_is_subtracted_from_the_layers() -> None:
    """92 layers, the first 3 dense: 89 MoE layers, the dense ones of intermediate_size 12288;
    one shared expert of moe_intermediate_size 1536; GQA 96 heads over 8 KV heads of 128."""
    spec = spec_from_hf_dict(_config("glm-4.5"), "t")
    assert (spec.layers, spec.moe_layers, spec.dense_intermediate) == (92, 89, 12288)
    assert (spec.shared_experts, spec.shared_intermediate) == (1, 1536)
    a = spec.attention
    assert (a.kind, a.heads, a.kv_heads, a.head_dim) == ("gqa", 96, 8, 128)
    no_prefix = _config("glm-4.5") | {"first_k_dense_replace": 0, "n_shared_experts": 0}
    spec = spec_from_hf_dict(no_prefix, "t")
    assert (spec.moe_layers, spec.shared_intermediate) == (92, 0)
