"""`catalog/hf/mixtral.py`: every layer MoE, no shared expert, head_dim derived as hidden /
heads where the config leaves it out, and a sliding window over every layer."""

from __future__ import annotations

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.mixtral import ADAPTERS, mixtral
from one_line import assert_one_line

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["mixtral-8x7b"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(("fixture", "key"), [("mixtral-8x7b", "num_local_experts")])
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


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


def test_the_adapter_and_its_model_type() -> None:
    assert {"mixtral": mixtral} == ADAPTERS


def test_every_layer_is_moe_with_no_shared_expert() -> None:
    spec = spec_from_hf_dict(_config("mixtral-8x7b"), "t")
    assert (spec.layers, spec.moe_layers, spec.dense_layers) == (32, 32, 0)
    assert (spec.experts, spec.topk, spec.moe_intermediate) == (8, 2, 14336)
    assert (spec.shared_experts, spec.shared_intermediate, spec.dense_intermediate) == (0, 0, 0)
    assert spec.attention.sliding_layers == 0  # the fixture's sliding_window is null
