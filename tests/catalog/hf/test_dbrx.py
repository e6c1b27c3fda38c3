"""`catalog/hf/dbrx.py`: DBRX's MosaicML names, its experts under `ffn_config` and its KV heads
under `attn_config`; every layer MoE, head_dim derived as d_model / n_heads."""

from __future__ import annotations

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.dbrx import ADAPTERS, dbrx
from one_line import assert_one_line

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["dbrx"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(("fixture", "key"), [("dbrx", "d_model")])
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


def test_dbrx_topk_above_experts() -> None:
    d = _config("dbrx")
    d["ffn_config"]["moe_top_k"] = 17
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert_one_line(info.value, "ffn_config.moe_top_k", "exceeds the 16")


def test_the_adapter_and_its_model_type() -> None:
    assert {"dbrx": dbrx} == ADAPTERS


def test_the_mosaicml_names_read_as_the_spec() -> None:
    """d_model 6144 over n_heads 48 is a head_dim of 128; 8 KV heads from attn_config; 16
    experts, top-4, ffn_hidden_size 10752 from ffn_config; all 40 layers MoE."""
    spec = spec_from_hf_dict(_config("dbrx"), "t")
    assert (spec.hidden, spec.layers, spec.moe_layers) == (6144, 40, 40)
    assert (spec.experts, spec.topk, spec.moe_intermediate) == (16, 4, 10752)
    a = spec.attention
    assert (a.heads, a.kv_heads, a.head_dim) == (48, 8, 128)
