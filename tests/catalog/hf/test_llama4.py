"""`catalog/hf/llama4.py`: the text model under `text_config` (or at the top level of a
`llama4_text` export), MoE every Nth layer or at listed layers, chunked attention modelled as
sliding layers, one shared expert per MoE layer."""

from __future__ import annotations

import copy

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.llama4 import ADAPTERS, llama4
from deepep_calc.catalog.model_catalog import load_models
from one_line import assert_one_line

from .configs import _config, assert_maps_to_preset


@pytest.mark.parametrize("name", ["llama4-maverick"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


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


def test_both_model_types_share_the_adapter() -> None:
    assert {"llama4": llama4, "llama4_text": llama4} == ADAPTERS


def test_a_listed_moe_layer_beyond_the_model_is_refused() -> None:
    d = _config("llama4-maverick")
    d["text_config"]["moe_layers"] = [1, 48]  # 48 layers: indices 0..47
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert info.value.field == "text_config.moe_layers"
    assert_one_line(info.value, "names a layer beyond 48")


def test_without_a_rope_list_every_fourth_layer_is_full() -> None:
    """The default `no_rope_layer_interval` is 4: of 48 layers, 12 are NoPE and full, 36 chunked."""
    d = _config("llama4-maverick")
    tc = d["text_config"]
    for key in ("no_rope_layers", "no_rope_layer_interval", "layer_types"):
        tc.pop(key, None)
    a = spec_from_hf_dict(d, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (tc["attention_chunk_size"], 36)
    tc["no_rope_layer_interval"] = 2
    assert spec_from_hf_dict(d, "t").attention.sliding_layers == 24


def test_moe_every_other_layer_has_one_shared_expert_and_a_dense_size() -> None:
    """Maverick interleaves MoE every 2nd layer: 24 of 48, the other 24 dense MLPs."""
    spec = spec_from_hf_dict(_config("llama4-maverick"), "t")
    assert (spec.layers, spec.moe_layers, spec.dense_layers) == (48, 24, 24)
    assert (spec.shared_experts, spec.shared_intermediate) == (1, spec.moe_intermediate)
    assert spec.dense_intermediate == 16384


def test_a_rope_list_of_another_length_is_refused() -> None:
    """`no_rope_layers` holds one flag per layer, like `layer_types`: four flags for 48 layers is
    a broken config, refused rather than replaced by the default interval."""
    d = _config("llama4-maverick")
    d["text_config"]["no_rope_layers"] = [1, 1, 1, 1]
    d["text_config"].pop("layer_types", None)
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    assert info.value.field == "text_config.no_rope_layers"
    assert_one_line(info.value, "has 4 entries for 48 layers")
