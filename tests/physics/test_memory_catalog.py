"""Memory per GPU (`physics/memory.py`) of catalog models on catalog nodes: what fits one node,
weights counted from total (not active) parameters, and KV starvation as a capacity verdict."""

from __future__ import annotations

from deepep_calc import Scenario, evaluate


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
