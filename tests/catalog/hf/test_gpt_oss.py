"""`catalog/hf/gpt_oss.py`: every layer MoE, alternating sliding / full attention (from
`layer_types`, else even-indexed layers slide), top-k under either of its two spellings."""

from __future__ import annotations

import pytest

from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.gpt_oss import ADAPTERS, gpt_oss

from .configs import _config, assert_maps_to_preset, assert_names_missing_field


@pytest.mark.parametrize("name", ["gpt-oss-120b"])
def test_fixture_maps_to_its_preset(name: str) -> None:
    assert_maps_to_preset(name)


@pytest.mark.parametrize(("fixture", "key"), [("gpt-oss-120b", "num_local_experts")])
def test_each_family_names_its_missing_field(fixture: str, key: str) -> None:
    assert_names_missing_field(fixture, key)


def test_gpt_oss_without_layer_types_alternates() -> None:
    d = _config("gpt-oss-120b")
    del d["layer_types"]
    del d["num_experts_per_tok"]  # falls back to experts_per_token
    spec = spec_from_hf_dict(d, "t")
    assert spec.attention.sliding_layers == 18 and spec.topk == 4


def test_the_adapter_and_its_model_type() -> None:
    assert {"gpt_oss": gpt_oss} == ADAPTERS


def test_layer_types_decide_how_many_layers_slide() -> None:
    """36 layers, the first 10 listed sliding and the rest full: 10 slide with the window."""
    d = _config("gpt-oss-120b")
    d["layer_types"] = ["sliding_attention"] * 10 + ["full_attention"] * 26
    a = spec_from_hf_dict(d, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (128, 10)


def test_no_window_or_no_sliding_layer_means_full_attention_everywhere() -> None:
    no_window = _config("gpt-oss-120b") | {"sliding_window": 0}
    assert spec_from_hf_dict(no_window, "t").attention.sliding_layers == 0
    all_full = _config("gpt-oss-120b")
    all_full["layer_types"] = ["full_attention"] * 36
    a = spec_from_hf_dict(all_full, "t").attention
    assert (a.sliding_window, a.sliding_layers) == (0, 0)
