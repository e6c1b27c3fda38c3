"""`catalog/hf/base.py`: the strict field reader every family adapter reads through, and the
pieces several families build from (grouped-query attention, per-layer counts, top-k and
MoE-layer checks). Every refusal is one line naming the full dotted field.

The first tests reach `Fields` through real configs (a family's adapter reading them); the
later ones call `Fields` and the helpers directly on small dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.catalog.hf import spec_from_hf_dict
from deepep_calc.catalog.hf.base import (
    MAX_INT,
    Fields,
    count_types,
    dense_intermediate,
    every_layer_moe,
    gqa,
    one_line,
    show,
)
from one_line import assert_one_line

from .configs import _config, _error


def fields(data: dict[str, Any], prefix: str = "") -> Fields:
    return Fields(data, "cfg.json", "fam", prefix)


def refusal(call: Any) -> FileInputError:
    with pytest.raises(FileInputError) as info:
        call()
    return info.value


# ---------------------------------------------------------------- through the families' configs


@pytest.mark.parametrize(
    ("fixture", "path"),
    [
        ("llama4-maverick", ("text_config",)),
        ("llama4-maverick", ("text_config", "num_local_experts")),
        ("dbrx", ("ffn_config", "moe_top_k")),
        ("dbrx", ("attn_config", "kv_n_heads")),
        ("dbrx", ("attn_config",)),
        ("gpt-oss-120b", ("quantization_config", "quant_method")),
    ],
)
def test_nested_missing_field_names_dotted_path(fixture: str, path: tuple[str, ...]) -> None:
    d = _config(fixture)
    target = d
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(d, "t")
    dotted = ".".join(path)
    assert_one_line(info.value, f"'{dotted}'")
    assert info.value.field == dotted


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("48", "must be an integer"),
        (48.0, "must be an integer"),
        (True, "must be an integer"),
        ([48], "must be an integer"),
        (0, "positive"),
        (-3, "positive"),
        (10**12, "implausibly large"),
    ],
)
def test_bad_numeric_value_names_field(tmp_path: Path, value: Any, needle: str) -> None:
    d = _config("mixtral-8x7b") | {"num_hidden_layers": value}
    err = _error(tmp_path, d)
    assert_one_line(err, "num_hidden_layers", needle)
    assert err.field == "num_hidden_layers"


def test_bad_nested_numeric_value(tmp_path: Path) -> None:
    d = _config("dbrx")
    d["ffn_config"]["moe_num_experts"] = "sixteen"
    err = _error(tmp_path, d)
    assert_one_line(err, "ffn_config.moe_num_experts", "must be an integer", '"sixteen"')


def test_huge_string_value_is_shortened(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"hidden_size": "x\n" * 10_000}
    msg = assert_one_line(_error(tmp_path, d), "hidden_size")
    assert len(msg) < 400


@pytest.mark.parametrize(
    ("fixture", "edit", "field"),
    [
        ("qwen3-30b-a3b-fp8", {"num_experts_per_tok": 129}, "num_experts_per_tok"),
        ("mixtral-8x7b", {"num_experts_per_tok": 9}, "num_experts_per_tok"),
        ("deepseek-v3", {"num_experts_per_tok": 257}, "num_experts_per_tok"),
    ],
)
def test_topk_above_experts(fixture: str, edit: dict[str, Any], field: str) -> None:
    with pytest.raises(FileInputError) as info:
        spec_from_hf_dict(_config(fixture) | edit, "t")
    assert_one_line(info.value, field, "exceeds")
    assert info.value.field == field


def test_kv_heads_not_dividing_heads(tmp_path: Path) -> None:
    d = _config("mixtral-8x7b") | {"num_key_value_heads": 7}
    err = _error(tmp_path, d)
    assert_one_line(err, "num_key_value_heads", "multiple")


def test_no_moe_layer_left(tmp_path: Path) -> None:
    d = _config("deepseek-v2-lite") | {"first_k_dense_replace": 27}
    err = _error(tmp_path, d)
    assert_one_line(err, "first_k_dense_replace", "no MoE layer")


def test_layer_types_length_mismatch(tmp_path: Path) -> None:
    d = _config("gpt-oss-120b")
    d["layer_types"] = d["layer_types"][:10]
    err = _error(tmp_path, d)
    assert_one_line(err, "layer_types", "10 entries for 36 layers")


def test_bad_list_field(tmp_path: Path) -> None:
    d = _config("qwen3-30b-a3b-fp8") | {"mlp_only_layers": "0,1"}
    assert_one_line(_error(tmp_path, d), "mlp_only_layers", "list")


def test_bad_boolean(tmp_path: Path) -> None:
    d = _config("qwen3-30b-a3b-fp8") | {"tie_word_embeddings": "no"}
    assert_one_line(_error(tmp_path, d), "tie_word_embeddings", "true or false")


# ---------------------------------------------------------------- Fields, directly


def test_a_refusal_names_the_origin_the_family_and_the_dotted_field() -> None:
    err = refusal(lambda: fields({}, "ffn_config.").integer("moe_top_k"))
    assert err.message == "cfg.json: missing field 'ffn_config.moe_top_k' (fam)"
    assert err.field == "ffn_config.moe_top_k" and err.path == "cfg.json"


def test_integer_defaults_bounds_and_null() -> None:
    """JSON null is absent; a default is returned as given; the bounds are inclusive."""
    f = fields({"n": 5, "none": None, "zero": 0, "big": MAX_INT})
    assert f.integer("n") == 5
    assert f.integer("absent", 7) == 7 and f.integer("none", 7) == 7
    assert f.integer("zero", minimum=0) == 0
    assert f.integer("big") == MAX_INT
    assert f.integer("n", maximum=5) == 5
    assert_one_line(refusal(lambda: f.integer("none")), "missing field 'none'")
    assert_one_line(refusal(lambda: f.integer("n", minimum=6)), "'n' must be an integer >= 6, got 5")
    assert_one_line(refusal(lambda: f.integer("zero")), "'zero' must be a positive integer, got 0")
    assert_one_line(refusal(lambda: f.integer("n", maximum=4)), "'n' = 5 is implausibly large (max 4)")


def test_flag_text_and_has() -> None:
    f = fields({"yes": True, "word": "w", "num": 3, "null": None})
    assert f.flag("yes", False) is True and f.flag("absent", True) is True and f.flag("null", False) is False
    assert f.text("word") == "w" and f.text("absent") is None
    assert_one_line(refusal(lambda: f.text("num")), "'num' must be a string, got 3")
    assert_one_line(refusal(lambda: f.flag("num", False)), "'num' must be true or false, got 3")
    assert (f.has("word"), f.has("null"), f.has("absent")) == (True, False, False)


def test_ints_accepts_layer_numbers_only() -> None:
    f = fields({"ok": [0, 3, 100_000], "neg": [-1], "flag": [True], "big": [100_001], "text": "0,1"})
    assert f.ints("ok") == [0, 3, 100_000] and f.ints("absent") == []
    for key in ("neg", "flag", "big", "text"):
        assert_one_line(refusal(lambda key=key: f.ints(key)), f"'{key}' must be a list of layer numbers")


def test_texts_must_list_one_string_per_layer() -> None:
    f = fields({"layer_types": ["a", "b"], "mixed": ["a", 1]})
    assert f.texts("layer_types", 2) == ["a", "b"] and f.texts("absent", 2) is None
    assert_one_line(refusal(lambda: f.texts("layer_types", 3)), "has 2 entries for 3 layers")
    assert_one_line(refusal(lambda: f.texts("mixed", 2)), "'mixed' must be a list of strings")


def test_child_is_a_nested_object_whose_fields_carry_the_prefix() -> None:
    f = fields({"outer": {"inner": {"n": "x"}}, "list": [1]})
    inner = f.child("outer").child("inner")
    assert inner.prefix == "outer.inner." and inner.origin == "cfg.json" and inner.family == "fam"
    assert refusal(lambda: inner.integer("n")).field == "outer.inner.n"
    assert_one_line(refusal(lambda: f.child("list")), "'list' must be an object, got [1]")
    assert refusal(lambda: f.child("absent")).field == "absent"


# ---------------------------------------------------------------- the shared pieces


def test_show_is_short_json_on_one_line() -> None:
    assert show("a\nb") == '"a\\nb"'  # JSON escapes the line break
    assert show([1, 2]) == "[1, 2]"
    assert show("x" * 100) == '"' + "x" * 56 + "..."  # 60 characters with the ellipsis
    assert len(show("x" * 100, limit=10)) == 10
    assert show({1j}) == "{1j}"  # not JSON: its repr


def test_one_line_collapses_whitespace_and_escapes_control_characters() -> None:
    assert one_line("  a \t b\n c ") == "a b c"
    assert one_line("x\x1b[2Jy") == "x\\x1b[2Jy"


def test_gqa_derives_head_dim_only_where_asked() -> None:
    """hidden 4096 over 32 heads is 128; without derivation head_dim must be stated."""
    f = fields({"num_attention_heads": 32, "num_key_value_heads": 8})
    assert gqa(f, 4096, derive_head_dim=True) == {"kind": "gqa", "heads": 32, "kv_heads": 8, "head_dim": 128}
    assert_one_line(refusal(lambda: gqa(f, 4096, derive_head_dim=False)), "missing field 'head_dim'")
    assert_one_line(
        refusal(lambda: gqa(f, 4100, derive_head_dim=True)), "hidden size 4100 is not divisible by 32 heads"
    )
    stated = fields({"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64})
    assert gqa(stated, 4096, derive_head_dim=True)["head_dim"] == 64  # a stated one wins


def test_gqa_reads_kv_heads_where_the_family_keeps_them() -> None:
    top = {"n_heads": 48, "attn": {"kv_n_heads": 7}}
    f = fields(top)
    err = refusal(
        lambda: gqa(
            f, 6144, derive_head_dim=True, heads_key="n_heads", kv_key="kv_n_heads", kv_owner=f.child("attn")
        )
    )
    assert err.field == "attn.kv_n_heads"
    assert_one_line(err, "n_heads (48) is not a multiple of attn.kv_n_heads (7)")


def test_count_types_counts_one_kind_or_says_there_is_no_list() -> None:
    f = fields({"layer_types": ["full", "sliding", "sliding", "full"]})
    assert count_types(f, 4, "sliding") == 2 and count_types(f, 4, "linear") == 0
    assert count_types(fields({}), 4, "sliding") is None


def test_dense_intermediate_is_required_only_when_some_layer_is_dense() -> None:
    f = fields({"intermediate_size": 18432})
    assert dense_intermediate(f, "intermediate_size", needed=True) == 18432
    assert dense_intermediate(fields({}), "intermediate_size", needed=False) == 0
    assert_one_line(
        refusal(lambda: dense_intermediate(fields({}), "intermediate_size", needed=True)),
        "missing field 'intermediate_size'",
    )


def test_every_layer_moe_has_no_dense_layer_and_no_shared_expert() -> None:
    f = fields({"vocab_size": 32000})
    attention = {"kind": "gqa", "heads": 32, "kv_heads": 8, "head_dim": 128}
    spec = every_layer_moe(f, 4096, 32, 8, 2, 14336, attention)
    assert spec == {
        "hidden": 4096,
        "layers": 32,
        "moe_layers": 32,
        "experts": 8,
        "topk": 2,
        "moe_intermediate": 14336,
        "vocab": 32000,
        "tie_embeddings": False,
        "attention": attention,
    }
