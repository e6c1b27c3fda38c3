"""`catalog/model_catalog.py`: recognising a preset by structure. `architecture` is what makes
two models one network; `preset_twin` finds the preset a config is (its measured cells apply);
`namesake_difference` says why a config that names a preset is not it. The presets themselves
and `--model` lookup are `test_model_catalog.py`'s."""

from __future__ import annotations

from deepep_calc.catalog.model_catalog import architecture, load_models, namesake_difference, preset_twin

PRESETS = load_models()
V3, R1 = PRESETS["deepseek-v3"], PRESETS["deepseek-r1"]


def test_architecture_leaves_out_names_provenance_and_the_context_window() -> None:
    shape = architecture(V3)
    for field in ("name", "hf_id", "source", "verified", "max_context", "checkpoints", "checkpoints_source"):
        assert field not in shape
    assert shape["experts"] == 256 and shape["attention"]["kind"] == "mla"
    assert architecture(V3.copy(name="x", source="y", max_context=4096, verified=False)) == shape
    assert architecture(V3.copy(weight_dtype="bf16")) != shape  # the dtype is part of the network


def test_a_twin_is_the_declared_preset_else_the_first_in_catalog_order() -> None:
    """DeepSeek-V3 and R1 share one structure; V3 comes first in models.toml."""
    assert list(PRESETS).index("deepseek-v3") < list(PRESETS).index("deepseek-r1")
    assert preset_twin(R1) == "deepseek-r1"  # its HF id names R1
    assert preset_twin(R1.copy(name="mine", hf_id="")) == "deepseek-v3"
    assert preset_twin(R1.copy(name="deepseek-r1", hf_id="")) == "deepseek-r1"  # its name does too
    assert (
        preset_twin(R1.copy(name="x", hf_id="", max_context=5)) == "deepseek-v3"
    )  # a RoPE change is the same network


def test_a_changed_structure_has_no_twin() -> None:
    assert preset_twin(V3.copy(name="x", hf_id="", hidden=1024)) is None


def test_a_namesake_that_differs_is_told_field_by_field() -> None:
    assert namesake_difference(V3.copy(experts=128)) == ("deepseek-v3", ["experts 128 vs 256"])
    squeezed = V3.copy(
        name="whatever", hf_id="deepseek-ai/DeepSeek-V3", attention=V3.attention.copy(kv_lora_rank=256)
    )
    assert namesake_difference(squeezed) == ("deepseek-v3", ["attention.kv_lora_rank 256 vs 512"])


def test_no_difference_to_tell_for_the_preset_itself_or_a_config_naming_none() -> None:
    assert namesake_difference(V3.copy(source="a config.json")) is None
    assert namesake_difference(V3.copy(name="mine", hf_id="", experts=128)) is None
