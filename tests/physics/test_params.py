"""Parameter and byte counts (`physics/params.py`), each worked by hand in its docstring."""

from __future__ import annotations

from deepep_calc.catalog.models import Attention
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics.params import (
    attention_params_per_layer,
    count_params,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_bytes_per_token_layer,
    weight_bytes,
)

from .hand import TOY, exact

FP8 = 1.0 + 4.0 / (128 * 128)


def test_gqa_attention_per_layer() -> None:
    """q 1024·8·128 = 1,048,576; k and v 2·1024·2·128 = 524,288; o 8·128·1024 = 1,048,576."""
    assert attention_params_per_layer(TOY) == 2_621_440


def test_mla_attention_per_layer_deepseek_v3() -> None:
    """DeepSeek-V3: q = 7168·1536 + 1536·128·(128+64) = 11,010,048 + 37,748,736;
    kv = 7168·(512+64) + 512·128·(128+128) = 4,128,768 + 16,777,216; o = 128·128·7168 =
    117,440,512. Sum 187,105,280."""
    assert attention_params_per_layer(resolve_model("deepseek-v3")) == 187_105_280


def test_mla_attention_without_q_compression() -> None:
    """No q_lora: q = hidden·heads·(nope+rope) = 1024·4·(32+16) = 196,608;
    kv = 1024·(64+16) + 64·4·(32+32) = 81,920 + 16,384; o = 4·32·1024 = 131,072. Sum 425,984."""
    att = Attention(
        kind="mla",
        heads=4,
        kv_heads=4,
        head_dim=0,
        kv_lora_rank=64,
        qk_rope_head_dim=16,
        qk_nope_head_dim=32,
        v_head_dim=32,
    )
    assert attention_params_per_layer(TOY.copy(**{"attention": att})) == 425_984


def test_toy_counts_by_placement_class() -> None:
    """The counts of `hand.py`'s docstring: routed 100,663,296; router 65,536; embed and head
    1,024,000 each; active 24,158,208; total 113,262,592."""
    p = count_params(TOY)
    assert p.attention == 10_485_760
    assert p.expert_layer == 1_572_864
    assert p.routed == 100_663_296
    assert p.router == 65_536
    assert p.embed == 1_024_000 and p.lm_head == 1_024_000
    assert p.shared == 0 and p.dense_mlp == 0
    assert p.active == 24_158_208
    assert p.total == 113_262_592


def test_shared_and_dense_layers_and_tied_embeddings() -> None:
    """4 layers, 3 MoE with 1 shared expert of 256, 1 dense layer of 2048, tied embeddings:
    shared = 3 × 1 × 3 × 1024 × 256 = 2,359,296; dense = 1 × 3 × 1024 × 2048 = 6,291,456;
    routed = 3 × 16 × 1,572,864 = 75,497,472; router = 3 × 1024 × 16 = 49,152; LM head 0.
    active = 10,485,760 + 6,291,456 + 2,359,296 + 49,152 + 0 + 3 × 2 × 1,572,864 = 28,622,848.
    total = 10,485,760 + 6,291,456 + 2,359,296 + 75,497,472 + 49,152 + 1,024,000 = 95,707,136."""
    m = TOY.copy(
        **{
            "moe_layers": 3,
            "shared_experts": 1,
            "shared_intermediate": 256,
            "dense_intermediate": 2048,
            "tie_embeddings": True,
        }
    )
    p = count_params(m)
    assert p.shared == 2_359_296
    assert p.dense_mlp == 6_291_456
    assert p.routed == 75_497_472
    assert p.router == 49_152
    assert p.lm_head == 0
    assert p.active == 28_622_848
    assert p.total == 95_707_136


def test_weight_bytes_with_dense_layers_and_shared_experts() -> None:
    """The model above, untied, BF16: replicated = (10,485,760 + 6,291,456 + 2,359,296) × 2
    + 49,152 × 2 + 2 × 1,024,000 × 2 = 38,273,024 + 98,304 + 4,096,000 = 42,467,328 B; read per
    step = 38,273,024 + 98,304 + 2,048,000 (head only) = 40,419,328 B."""
    m = TOY.copy(
        **{"moe_layers": 3, "shared_experts": 1, "shared_intermediate": 256, "dense_intermediate": 2048}
    )
    wb = weight_bytes(m)
    assert wb.replicated == 42_467_328
    assert wb.per_token_replicated_read == 40_419_328
    assert wb.routed == 75_497_472 * 2


def test_linear_attention_layers_carry_their_own_weights() -> None:
    """1 of 4 layers linear with 1,000,000 weights: 3 × 2,621,440 + 1,000,000 = 8,864,320."""
    att = TOY.attention.copy(**{"linear_layers": 1, "linear_params": 1_000_000})
    assert count_params(TOY.copy(**{"attention": att})).attention == 8_864_320


def test_bf16_weight_bytes() -> None:
    """BF16 (2 B): replicated = (attention 10,485,760 + router 65,536 + embed + head 2,048,000) × 2
    = 25,198,592; routed = 100,663,296 × 2 = 201,326,592; one expert 3,145,728; head 2,048,000;
    read per step = (attention + router + head) × 2 = 11,575,296 × 2 = 23,150,592 (the embedding
    table is looked up, not streamed)."""
    wb = weight_bytes(TOY)
    assert wb.replicated == 25_198_592
    assert wb.routed == 201_326_592
    assert wb.expert_layer == 3_145_728
    assert wb.lm_head == 2_048_000
    assert wb.per_token_replicated_read == 23_150_592
    assert wb.total == 25_198_592 + 201_326_592


def test_fp8_weights_keep_router_and_embeddings_bf16_and_mxfp4_experts() -> None:
    """FP8 weights (1 + 4/128² B), MXFP4 experts (4.25 bits = 0.53125 B):
    replicated = 10,485,760 × fp8 + 65,536 × 2 + 2,048,000 × 2; routed = 100,663,296 × 0.53125
    = 53,477,376; read = 10,485,760 × fp8 + 65,536 × 2 + 1,024,000 × 2."""
    wb = weight_bytes(TOY.copy(**{"weight_dtype": "fp8", "expert_dtype": "mxfp4"}))
    assert wb.replicated == exact(10_485_760 * FP8 + 131_072 + 4_096_000)
    assert wb.routed == 53_477_376
    assert wb.expert_layer == 1_572_864 * 0.53125
    assert wb.per_token_replicated_read == exact(10_485_760 * FP8 + 131_072 + 2_048_000)


def test_tied_embeddings_are_stored_once_and_read_as_the_head() -> None:
    """Tied: replicated holds the table once, (10,485,760 + 65,536 + 1,024,000) × 2 = 23,150,592,
    and the step still reads it as the LM head: read = 23,150,592, head bytes 2,048,000."""
    wb = weight_bytes(TOY.copy(**{"tie_embeddings": True}))
    assert wb.replicated == 23_150_592
    assert wb.lm_head == 2_048_000
    assert wb.per_token_replicated_read == 23_150_592


def test_kv_bytes_per_token_mla_and_gqa() -> None:
    """MLA DeepSeek-V3 BF16: (512 + 64) × 2 = 1,152 B per layer, × 61 = 70,272 B.
    GQA Qwen3-30B-A3B BF16: 2 × 4 × 128 × 2 = 2,048 B per layer, × 48 = 98,304 B.
    The toy: 2 × 2 × 128 × 2 = 1,024 B per layer; FP8 KV halves the BF16 bytes (plus scales)."""
    ds, qw = resolve_model("deepseek-v3"), resolve_model("qwen3-30b-a3b")
    assert kv_bytes_per_token_layer(ds) == 1_152
    assert kv_bytes_per_token(ds) == 70_272
    assert kv_bytes_per_token_layer(qw) == 2_048
    assert kv_bytes_per_token(qw) == 98_304
    assert kv_bytes_per_token_layer(TOY) == 1_024
    assert kv_bytes_per_token_layer(TOY.copy(**{"kv_dtype": "fp8"})) == exact(512 * FP8)


def test_kv_per_sequence_full_sliding_and_linear_layers() -> None:
    """1,000 tokens, 1,024 B per token-layer.
    All 4 layers full: 1,024 × 4 × 1,000 = 4,096,000.
    2 sliding layers, window 100: 1,024 × (2 × 1,000 + 2 × 100) = 2,252,800; at 50 tokens
    (inside the window) 1,024 × 4 × 50 = 204,800.
    1 linear layer with a 5,000 B state, 1 sliding, 2 full: 1,024 × (2,000 + 100) + 5,000
    = 2,155,400; no token count changes the state.
    `kv_bytes_per_token` ignores windows but not linear layers: 1,024 × 3 = 3,072."""
    assert kv_bytes_per_sequence(TOY, 1000.0) == 4_096_000
    sliding = TOY.copy(**{"attention": TOY.attention.copy(**{"sliding_layers": 2, "sliding_window": 100})})
    assert kv_bytes_per_sequence(sliding, 1000.0) == 2_252_800
    assert kv_bytes_per_sequence(sliding, 50.0) == 204_800
    mixed = TOY.copy(
        **{
            "attention": TOY.attention.copy(
                **{
                    "sliding_layers": 1,
                    "sliding_window": 100,
                    "linear_layers": 1,
                    "linear_state_bytes": 5000,
                }
            )
        }
    )
    assert kv_bytes_per_sequence(mixed, 1000.0) == 2_155_400
    assert kv_bytes_per_token(mixed) == 3_072


def test_per_model_cache_answers_by_value_whatever_the_object() -> None:
    """The identity look-up in front of the value cache never answers for another model: an
    equal copy gets the same counts, an edited copy its own, and a row seen again is a hit."""
    m = resolve_model("deepseek-v3")
    first = weight_bytes(m)
    assert weight_bytes(m) is first  # the same row: the identity look-up
    twin = m.copy()
    assert twin is not m and weight_bytes(twin) == first
    fewer = m.copy(experts=m.experts // 2)
    assert weight_bytes(fewer).routed == first.routed / 2
    assert count_params(fewer).routed == count_params(m).routed / 2
    assert weight_bytes(m) is first
