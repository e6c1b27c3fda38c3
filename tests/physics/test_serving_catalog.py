"""Serving figures of catalog scenarios (`physics/serving.py`: running sequences, TTFT, the
tax, the arms' aggregates) through `evaluate`, against published A/Bs and the built-in cells.
"""

from __future__ import annotations

from deepep_calc import Scenario, evaluate


def test_deepseek_ab_on_efa_picks_deepep_under_graphs_and_dense_in_eager_trtllm() -> None:
    """[U926]: UCCL-EP 24.3 vs allgather 43.8 ms TPOT (DeepEP 1.8x) on DeepSeek-V3, 2x p5en, vLLM
    graphs. At its light load (6 running) DeepEP beats allgather as measured, but two
    single-node tensor-parallel replicas, which [U926] did not run, beat both: the dense side
    ahead, as the public A/Bs against TP mostly find. A batch of 512 short prompts leaves each
    replica short of KV cache, and DeepEP beats them too. The calibration A/B (TRT-LLM eager,
    proxy): dense. Both directions from one model."""
    u926 = dict(model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, transport="efa-uccl")
    graphs = evaluate(Scenario(**u926, concurrency=6, isl=1024, osl=256))
    assert graphs.ratio_per_user.scalar > 1.3
    assert graphs.verdict.code == "dense" and graphs.verdict.recommended_arm == "replica"
    assert graphs.arms["replica"].layout == "replica:tp"
    assert evaluate(Scenario(**u926, concurrency=512, isl=128, osl=1024)).verdict.code == "deepep"
    assert evaluate(Scenario()).verdict.code == "dense"


def test_max_batch_caps_running_sequences_and_defaults_to_the_engines() -> None:
    """TRT-LLM's own default (2048 per rank) does not cap DeepSeek at concurrency 2048 over 16
    ranks (128 per rank); the calibration run's 16 per rank does (256 running)."""
    free = evaluate(Scenario(model="deepseek-v3", nodes=2, transport="efa-gda", concurrency=2048))
    capped = evaluate(
        Scenario(model="deepseek-v3", nodes=2, transport="efa-gda", concurrency=2048, max_batch=16)
    )
    assert free.arms["deepep"].running.scalar == 2048
    assert capped.arms["deepep"].running.scalar == 256
    assert capped.arms["deepep"].ttft_ms.scalar > 5 * free.arms["deepep"].ttft_ms.scalar
