"""`catalog/model_catalog.py`: the preset catalog. Every row loads, matches shared
facts/models.md and resolves by name or HF id (`find_model`, and `io/hf_config.py:
resolve_model` for a preset; its reading of a config.json path is `tests/io/test_hf_config.py`'s);
a malformed row is named by preset and field."""

from __future__ import annotations

import pytest

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.catalog.model_catalog import (
    find_model,
    load_models,
    parse_models,
    preset_names,
)
from deepep_calc.catalog.models import ModelSpec
from deepep_calc.io.hf_config import resolve_model
from paths import TESTS

FIXTURES = TESTS / "fixtures" / "hf"

PRESETS = {
    "deepseek-v3",
    "deepseek-r1",
    "kimi-k2",
    "qwen3-235b-a22b",
    "qwen3-235b-a22b-fp8",
    "qwen3-30b-a3b",
    "qwen3-30b-a3b-fp8",
    "qwen3-next-80b-a3b",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "llama4-maverick",
    "llama4-scout",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "glm-4.5",
    "glm-4.5-air",
    "dbrx",
    "deepseek-v2-lite",
}
NOT_VERIFIED = {"gpt-oss-20b", "mixtral-8x22b", "glm-4.5-air"}

# Straight from the facts table: hidden, layers, MoE layers, routed, shared, top-k,
# moe_intermediate, dense intermediate (None where the facts give none).
FACTS = {
    "deepseek-v3": (7168, 61, 58, 256, 1, 8, 2048, 18432),
    "deepseek-r1": (7168, 61, 58, 256, 1, 8, 2048, 18432),
    "kimi-k2": (7168, 61, 60, 384, 1, 8, 2048, 18432),
    "qwen3-235b-a22b": (4096, 94, 94, 128, 0, 8, 1536, 12288),
    "qwen3-235b-a22b-fp8": (4096, 94, 94, 128, 0, 8, 1536, 12288),
    "qwen3-30b-a3b": (2048, 48, 48, 128, 0, 8, 768, 6144),
    "qwen3-30b-a3b-fp8": (2048, 48, 48, 128, 0, 8, 768, 6144),
    "qwen3-next-80b-a3b": (2048, 48, 48, 512, 1, 10, 512, None),
    "gpt-oss-120b": (2880, 36, 36, 128, 0, 4, 2880, None),
    "gpt-oss-20b": (2880, 24, 24, 32, 0, 4, 2880, None),
    "llama4-maverick": (5120, 48, 24, 128, 1, 1, 8192, 16384),
    "llama4-scout": (5120, 48, 48, 16, 1, 1, 8192, None),
    "mixtral-8x7b": (4096, 32, 32, 8, 0, 2, 14336, None),
    "mixtral-8x22b": (6144, 56, 56, 8, 0, 2, 16384, None),
    "glm-4.5": (5120, 92, 89, 160, 1, 8, 1536, None),
    "glm-4.5-air": (4096, 46, 45, 128, 1, 8, 1408, None),
    "dbrx": (6144, 40, 40, 16, 0, 4, 10752, None),
    "deepseek-v2-lite": (2048, 27, 26, 64, 2, 6, 1408, 10944),
}

# Attention from the facts table: kind, heads, kv heads (GQA), head_dim (GQA), kv_lora, rope.
ATTENTION = {
    "deepseek-v3": ("mla", 128, None, None, 512, 64),
    "kimi-k2": ("mla", 64, None, None, 512, 64),
    "deepseek-v2-lite": ("mla", None, None, None, 512, 64),
    "qwen3-235b-a22b": ("gqa", 64, 4, 128, 0, 0),
    "qwen3-30b-a3b": ("gqa", 32, 4, 128, 0, 0),
    "qwen3-next-80b-a3b": ("gqa", 16, 2, 256, 0, 0),
    "gpt-oss-120b": ("gqa", 64, 8, 64, 0, 0),
    "gpt-oss-20b": ("gqa", 64, 8, 64, 0, 0),
    "llama4-maverick": ("gqa", 40, 8, 128, 0, 0),
    "llama4-scout": ("gqa", 40, 8, None, 0, 0),
    "mixtral-8x7b": ("gqa", 32, 8, 128, 0, 0),
    "mixtral-8x22b": ("gqa", 48, 8, 128, 0, 0),
    "glm-4.5": ("gqa", 96, 8, 128, 0, 0),
    "glm-4.5-air": ("gqa", 96, 8, None, 0, 0),
    "dbrx": ("gqa", 48, 8, None, 0, 0),
}


def _params(m: ModelSpec) -> tuple[float, float]:
    """Rough (total, active) parameter counts, independent of physics/params.py.

    Only here to catch a mistyped size in models.toml: a wrong hidden size or expert count
    moves the total far outside the tolerance, while norms and biases do not matter.
    """
    a, h = m.attention, m.hidden
    if a.kind == "mla":
        q = h * a.q_lora_rank + a.q_lora_rank * a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
        if not a.q_lora_rank:
            q = h * a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
        kv = h * (a.kv_lora_rank + a.qk_rope_head_dim)
        kv += a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim)
        attn = q + kv + a.heads * a.v_head_dim * h
    else:
        attn = h * a.head_dim * (a.heads + 2 * a.kv_heads) + a.heads * a.head_dim * h
    full_layers = m.layers - a.linear_layers
    attn_all = full_layers * attn + a.linear_layers * a.linear_params
    expert = 3 * h * m.moe_intermediate
    shared = m.shared_experts * 3 * h * m.shared_intermediate
    dense = m.dense_layers * 3 * h * m.dense_intermediate
    router = m.moe_layers * h * m.experts
    unembed = m.vocab * h
    embed = 0 if m.tie_embeddings else m.vocab * h
    common = attn_all + dense + router + unembed + m.moe_layers * shared
    total = common + embed + m.moe_layers * m.experts * expert
    active = common + m.moe_layers * m.topk * expert
    return total / 1e9, active / 1e9


def test_every_preset_loads_and_validates() -> None:
    models = load_models()
    assert set(models) == PRESETS
    assert preset_names() == list(models)
    for name, spec in models.items():
        assert isinstance(spec, ModelSpec)
        assert spec.name == name
        # Re-validating the dump proves the row satisfies every schema rule on its own.
        assert ModelSpec.validate(spec.as_dict()) == spec


def test_rows_cite_facts_and_hf_id() -> None:
    for spec in load_models().values():
        assert "facts/models.md" in spec.source, spec.name
        assert spec.hf_id and spec.hf_id in spec.source, spec.name
        assert "/" in spec.hf_id


def test_unverified_rows_follow_facts_marks() -> None:
    for name, spec in load_models().items():
        assert spec.verified is (name not in NOT_VERIFIED), name
        if not spec.verified:
            assert "nv" in spec.source


@pytest.mark.parametrize("name", sorted(FACTS))
def test_structure_matches_facts_table(name: str) -> None:
    m = load_models()[name]
    hidden, layers, moe_layers, experts, shared, topk, moe_inter, dense = FACTS[name]
    assert (m.hidden, m.layers, m.moe_layers) == (hidden, layers, moe_layers)
    assert (m.experts, m.shared_experts, m.topk) == (experts, shared, topk)
    assert m.moe_intermediate == moe_inter
    if dense is not None:
        assert m.dense_intermediate == dense
    if m.shared_experts:
        assert m.shared_intermediate > 0


def test_shared_expert_sizes_are_one_expert() -> None:
    sizes = {
        "deepseek-v3": 2048,
        "deepseek-r1": 2048,
        "kimi-k2": 2048,
        "deepseek-v2-lite": 1408,
        "qwen3-next-80b-a3b": 512,
        "llama4-maverick": 8192,
        "llama4-scout": 8192,
        "glm-4.5": 1536,
        "glm-4.5-air": 1408,
    }
    models = load_models()
    for name, size in sizes.items():
        assert models[name].shared_intermediate == size, name
    for name, spec in models.items():
        if name not in sizes:
            assert spec.shared_experts == 0 and spec.shared_intermediate == 0, name


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_matches_facts_table(name: str) -> None:
    a = load_models()[name].attention
    kind, heads, kv_heads, head_dim, kv_lora, rope = ATTENTION[name]
    assert a.kind == kind
    if heads is not None:
        assert a.heads == heads
    if kind == "mla":
        assert a.kv_heads == a.heads and a.head_dim == 0
        assert (a.kv_lora_rank, a.qk_rope_head_dim) == (kv_lora, rope)
        assert a.qk_nope_head_dim == 128 and a.v_head_dim == 128
    else:
        assert a.kv_heads == kv_heads
        if head_dim is not None:
            assert a.head_dim == head_dim


def test_deepseek_v3_mla_details() -> None:
    a = load_models()["deepseek-v3"].attention
    assert a.q_lora_rank == 1536
    assert load_models()["deepseek-v2-lite"].attention.q_lora_rank == 0  # absent in V2-Lite


def test_kv_bytes_per_token_match_facts_examples() -> None:
    """The two worked examples in the facts file, from the catalog's own fields."""
    v3 = load_models()["deepseek-v3"]
    a = v3.attention
    assert (a.kv_lora_rank + a.qk_rope_head_dim) * v3.layers * 2 == 70_272
    q = load_models()["qwen3-30b-a3b"]
    g = q.attention
    assert 2 * g.kv_heads * g.head_dim * q.layers * 2 == 98_304


def test_sliding_and_linear_layouts() -> None:
    m = load_models()
    for name, layers, window, count in [
        ("gpt-oss-120b", 36, 128, 18),
        ("gpt-oss-20b", 24, 128, 12),
        ("llama4-maverick", 48, 8192, 36),
        ("llama4-scout", 48, 8192, 36),
    ]:
        a = m[name].attention
        assert m[name].layers == layers
        assert (a.sliding_window, a.sliding_layers, a.linear_layers) == (window, count, 0), name
    nxt = m["qwen3-next-80b-a3b"].attention
    assert nxt.linear_layers == 36 and nxt.sliding_layers == 0
    assert nxt.linear_state_bytes == 32 * 128 * 128 * 4
    assert nxt.linear_params == 2048 * (2 * 16 * 128 + 2 * 32 * 128) + 2048 * 64 + 32 * 128 * 2048
    for name, spec in m.items():
        if name not in {
            "gpt-oss-120b",
            "gpt-oss-20b",
            "llama4-maverick",
            "llama4-scout",
            "qwen3-next-80b-a3b",
        }:
            assert spec.attention.sliding_layers == 0 and spec.attention.linear_layers == 0, name


def test_native_dtypes() -> None:
    m = load_models()
    fp8 = {"deepseek-v3", "deepseek-r1", "kimi-k2", "qwen3-235b-a22b-fp8", "qwen3-30b-a3b-fp8"}
    for name, spec in m.items():
        assert spec.kv_dtype == "bf16", name
        if name in fp8:
            assert (spec.weight_dtype, spec.expert_dtype) == ("fp8", None), name
        elif name.startswith("gpt-oss"):
            assert (spec.weight_dtype, spec.expert_dtype) == ("bf16", "mxfp4"), name
            assert spec.routed_dtype == "mxfp4"
        else:
            assert (spec.weight_dtype, spec.expert_dtype) == ("bf16", None), name


def test_vocab_sizes() -> None:
    expected = {
        "deepseek-v3": 129280,
        "kimi-k2": 163840,
        "qwen3-30b-a3b": 151936,
        "qwen3-next-80b-a3b": 151936,
        "gpt-oss-120b": 201088,
        "llama4-scout": 202048,
        "mixtral-8x7b": 32000,
        "mixtral-8x22b": 32768,
        "glm-4.5": 151552,
        "dbrx": 100352,
        "deepseek-v2-lite": 102400,
    }
    m = load_models()
    for name, vocab in expected.items():
        assert m[name].vocab == vocab, name


def test_r1_is_v3_structure() -> None:
    m = load_models()
    drop = {"name", "hf_id", "source", "checkpoints", "checkpoints_source"}  # names, not structure
    assert m["deepseek-r1"].as_dict(exclude=drop) == m["deepseek-v3"].as_dict(exclude=drop)


def test_fp8_variants_differ_only_in_dtype() -> None:
    m = load_models()
    drop = {"name", "hf_id", "source", "weight_dtype", "checkpoints", "checkpoints_source"}
    for base in ("qwen3-235b-a22b", "qwen3-30b-a3b"):
        assert m[base + "-fp8"].as_dict(exclude=drop) == m[base].as_dict(exclude=drop)
        # each names the other as its checkpoint in the other dtype (the launch command's source)
        assert m[base].checkpoints == {"fp8": m[base + "-fp8"].hf_id}
        assert m[base + "-fp8"].checkpoints == {"bf16": m[base].hf_id}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_sizes_reproduce_stated_parameter_counts(name: str) -> None:
    """All experts count toward the total; a wrong size in a row shows up here."""
    spec = load_models()[name]
    assert spec.stated_total_params_b and spec.stated_active_params_b
    total, active = _params(spec)
    assert total == pytest.approx(spec.stated_total_params_b, rel=0.03)
    # Active counts are marketing round numbers ("A3B"); Qwen3-Next's is the roughest.
    rel = 0.2 if name == "qwen3-next-80b-a3b" else 0.1
    assert active == pytest.approx(spec.stated_active_params_b, rel=rel)


def test_load_models_is_cached_but_safe_to_mutate() -> None:
    first = load_models()
    first.pop("dbrx")
    second = load_models()
    assert "dbrx" in second
    assert second["deepseek-v3"] is load_models()["deepseek-v3"]


# ---------------------------------------------------------------- find_model, resolve_model


def test_find_model_reads_no_file() -> None:
    """The catalog names presets (by name or HF id) and leaves a path to `io/hf_config.py`."""
    assert find_model(" DeepSeek-V3 ") is load_models()["deepseek-v3"]
    assert find_model("Qwen/Qwen3-30B-A3B-FP8") is load_models()["qwen3-30b-a3b-fp8"]
    assert find_model(str(FIXTURES / "mixtral-8x7b")) is None
    assert find_model("nowhere/config.json") is None
    with pytest.raises(InputError) as info:
        find_model("llama-3")
    assert info.value.field == "--model"


@pytest.mark.parametrize("text", ["DeepSeek-V3", "deepseek-v3", "  DEEPSEEK-V3 "])
def test_resolve_preset_case_insensitive(text: str) -> None:
    assert resolve_model(text) is load_models()["deepseek-v3"]


def test_resolve_by_hf_id() -> None:
    assert resolve_model("Qwen/Qwen3-30B-A3B-FP8").name == "qwen3-30b-a3b-fp8"


@pytest.mark.parametrize("text", ["deepseek-v4", "", "llama-3"])
def test_unknown_preset_lists_presets(text: str) -> None:
    with pytest.raises(InputError) as info:
        resolve_model(text)
    msg = info.value.message
    assert info.value.field == "--model"
    assert msg.startswith("--model: ")
    assert "\n" not in msg
    for name in PRESETS:
        assert name in msg
    assert "config.json" in msg


# ---------------------------------------------------------------- malformed rows

GOOD_ROW = """
[[model]]
name = "tiny"
family = "mixtral"
source = "test"
hidden = 64
layers = 2
moe_layers = 2
experts = 4
topk = 2
moe_intermediate = 128
vocab = 1000
[model.attention]
kind = "gqa"
heads = 4
kv_heads = 2
head_dim = 16
"""


def test_parse_models_accepts_a_minimal_row() -> None:
    models = parse_models(GOOD_ROW)
    assert list(models) == ["tiny"]
    assert models["tiny"].experts == 4


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("experts = 4", 'experts = "four"'), "experts"),
        (("topk = 2", "topk = 8"), "topk"),  # cross-field rule: top-k exceeds experts
        (("head_dim = 16", "head_dim = 16\nwindow = 3"), "attention.window"),
        (("kv_heads = 2", "kv_heads = 3"), "attention"),
        (("vocab = 1000\n", ""), "vocab"),
        (('name = "tiny"', 'name = "Tiny"'), "name"),
    ],
)
def test_malformed_row_names_preset_and_field(edit: tuple[str, str], field: str) -> None:
    text = GOOD_ROW.replace(*edit)
    assert text != GOOD_ROW
    with pytest.raises(CalcError) as info:
        parse_models(text, origin="models.toml")
    msg = info.value.message
    assert "'tiny'" in msg.lower() and f"'{field}'" in msg
    assert "\n" not in msg


def test_duplicate_and_broken_toml_are_reported() -> None:
    with pytest.raises(CalcError, match="listed twice"):
        parse_models(GOOD_ROW + GOOD_ROW)
    with pytest.raises(CalcError, match="not valid TOML"):
        parse_models("[[model]\nname=")
    with pytest.raises(CalcError, match="row 1"):
        parse_models("[[model]]\nhidden = 1\n")
