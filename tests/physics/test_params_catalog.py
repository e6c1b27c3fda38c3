"""Parameter and KV-cache counts (`physics/params.py`) of catalog models against their model
cards: MLA and GQA KV per token, total parameters, sliding-window and linear layers' caps."""

from __future__ import annotations

import pytest

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
