"""Memory model: total parameters, MLA/GQA KV, and the capacity verdicts the issue names."""

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics.params import count_params, kv_bytes_per_sequence, kv_bytes_per_token


def test_mla_kv_deepseek_v3_bf16() -> None:
    assert kv_bytes_per_token(resolve_model("deepseek-v3")) == 70_272


def test_gqa_kv_qwen3_30b_bf16() -> None:
    assert kv_bytes_per_token(resolve_model("qwen3-30b-a3b")) == 98_304


def test_total_params_match_the_card() -> None:
    for name, total in (("deepseek-v3", 671e9), ("qwen3-235b-a22b", 235e9), ("mixtral-8x7b", 46.7e9)):
        assert count_params(resolve_model(name)).total == pytest.approx(total, rel=0.03)


def test_sliding_and_linear_layers_cap_kv() -> None:
    oss = resolve_model("gpt-oss-120b")
    short, long = kv_bytes_per_sequence(oss, 100), kv_bytes_per_sequence(oss, 100_000)
    full_only = kv_bytes_per_token(oss) * 100_000
    assert long < full_only  # window layers stop growing
    nxt = resolve_model("qwen3-next-80b-a3b")
    assert kv_bytes_per_sequence(nxt, 1) > 0  # linear layers hold a state even for one token
    assert short > 0


def test_deepseek_v3_fp8_does_not_fit_one_p5_node() -> None:
    r = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=2, concurrency=32))
    assert not r.arms["replica"].fits_memory
    assert r.verdict.code == "capacity"


def test_deepseek_v3_bf16_does_not_fit_one_p5en_node() -> None:
    r = evaluate(Scenario(model="deepseek-v3", instance="p5en", nodes=2, weight_dtype="bf16", concurrency=8))
    assert not r.arms["replica"].fits_memory
    assert r.verdict.code == "capacity"
    fp8 = evaluate(Scenario(model="deepseek-v3", instance="p5en", nodes=2, concurrency=8))
    assert fp8.arms["replica"].fits_memory  # FP8 (671 GB) fits 8 x 141 GB


def test_qwen3_235b_fp8_fits_one_p5en_node() -> None:
    r = evaluate(Scenario(model="qwen3-235b-a22b-fp8", instance="p5en", nodes=2, concurrency=32))
    assert r.arms["replica"].fits_memory and r.verdict.code != "capacity"


def test_weights_use_total_not_active_parameters() -> None:
    r = evaluate(Scenario(model="deepseek-v3", instance="p5en", nodes=4, concurrency=8))
    weights = r.arms["deepep"].memory.weights_gb.scalar
    # 671B FP8 over 32 GPUs is ~20 GB of experts each plus replicated attention; active (37B) would be ~1 GB
    assert 20 < weights < 40


def test_kv_starvation_is_capacity_not_a_checkbox() -> None:
    small = evaluate(Scenario(model="qwen3-235b-a22b-fp8", nodes=2, concurrency=64, isl=2048))
    huge = evaluate(
        Scenario(model="qwen3-235b-a22b-fp8", nodes=2, engine="vllm", concurrency=2048, isl=8192, osl=1024)
    )
    assert small.arms["replica"].fits_memory
    assert not huge.arms["replica"].fits_memory
    assert huge.verdict.code == "capacity"
    assert small.arms["replica"].memory.max_concurrency.scalar > 64
