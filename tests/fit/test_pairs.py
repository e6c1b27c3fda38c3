"""Pairing a dense and a DeepEP run into an A/B (`fit/pairs.py`): the refusals of runs that ran
different workloads, the doubts that only weaken a pair, and the tax, its spread and the ratios.

The runs are built in memory (no export is read). The pair of most tests, at 32 clients:

    dense   ITL 36 ms (std 4 over 400 tokens), 27.5 tok/s per user, 800 tok/s, TTFT p50 100 / avg 120
    DeepEP  ITL 51 ms (std 3 over 900 tokens), 20 tok/s per user,   550 tok/s, TTFT p50 200 / avg 300
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.fit.pairs import check_pair, derive_pair, group_by_concurrency, workload_length
from deepep_calc.io.aiperf.run import AIPerfRun
from one_line import assert_one_line


def m(value: float, unit: str = "ms") -> Q:
    return Q.measured(value, unit, "hand export")


def run(name: str, **changes: Any) -> AIPerfRun:
    """A streaming run of Qwen3-30B at 32 clients, ISL 120 and OSL 128 requested."""
    base: dict[str, Any] = {
        "path": Path(f"/runs/{name}.json"),
        "benchmark_id": None,
        "schema_version": "1.0",
        "aiperf_version": "0.3.0",
        "export_format": "json",
        "model": "Qwen/Qwen3-30B-A3B-FP8",
        "model_exported": "Qwen/Qwen3-30B-A3B-FP8",
        "concurrency": 32,
        "isl_requested": 120.0,
        "osl_requested": 128.0,
        "isl_measured": None,
        "osl_measured": None,
        "streaming": True,
        "was_cancelled": False,
        "error_count": 0,
        "request_count": 320,
        "itl_ms": m(36.0),
        "itl_std_ms": m(4.0),
        "itl_p50_ms": None,
        "itl_count": m(400.0, "tokens"),
        "ttft_ms": m(120.0),
        "ttft_p50_ms": m(100.0),
        "per_user_tok_s": m(27.5, "tok/s"),
        "aggregate_tok_s": m(800.0, "tok/s"),
        "request_latency_ms": None,
    }
    base.update(changes)
    return AIPerfRun(**base)


DENSE = run("dense")
DEEPEP = run(
    "deepep",
    itl_ms=m(51.0),
    itl_std_ms=m(3.0),
    itl_count=m(900.0, "tokens"),
    per_user_tok_s=m(20.0, "tok/s"),
    aggregate_tok_s=m(550.0, "tok/s"),
    ttft_p50_ms=m(200.0),
    ttft_ms=m(300.0),
)


def test_the_tax_its_spread_and_the_ratios() -> None:
    """Tax 51 − 36 = 15 ms per token, derived; spread √(4² / 400 + 3² / 900) = √0.05 ms; from the
    per-user rates 1000 / 20 − 1000 / 27.5 = 13.636 ms; ratios DeepEP over dense: per user
    20 / 27.5, aggregate 550 / 800 = 0.6875, TTFT on the p50s 200 / 100 = 2."""
    pair = derive_pair(DENSE, DEEPEP)
    assert (pair.tax_ms.scalar, pair.tax_ms.unit, pair.tax_ms.tag) == (15.0, "ms", Tag.DERIVED)
    assert pair.tax_spread_ms is not None and pair.tax_spread_ms.scalar == pytest.approx(
        math.sqrt(0.05), rel=1e-13
    )
    assert pair.tax_from_per_user_ms is not None
    assert pair.tax_from_per_user_ms.scalar == pytest.approx(50.0 - 1000.0 / 27.5, rel=1e-13)
    assert pair.per_user_ratio is not None and pair.per_user_ratio.scalar == pytest.approx(
        20.0 / 27.5, rel=1e-13
    )
    assert pair.aggregate_ratio is not None and pair.aggregate_ratio.scalar == 0.6875
    assert pair.ttft_ratio is not None and (pair.ttft_ratio.scalar, pair.ttft_basis) == (2.0, "p50")
    assert pair.steady_aggregate_ratio is None  # neither run waited for a cold start
    assert pair.step_ms_dense is DENSE.itl_ms and pair.step_ms_deepep is DEEPEP.itl_ms  # passed through
    assert pair.concurrency == 32 and pair.warnings == []


def test_the_ttft_ratio_falls_back_to_the_means() -> None:
    """Without a p50 in one run: the means, 300 / 120 = 2.5; with neither, no ratio."""
    pair = derive_pair(DENSE, run("deepep", ttft_ms=m(300.0), ttft_p50_ms=None))
    assert pair.ttft_ratio is not None and (pair.ttft_ratio.scalar, pair.ttft_basis) == (2.5, "avg")
    bare = derive_pair(run("dense", ttft_ms=None, ttft_p50_ms=None), DEEPEP)
    assert (bare.ttft_ratio, bare.ttft_basis) == (None, None)


def test_a_steady_state_aggregate_where_a_run_waited_for_a_cold_start() -> None:
    """DeepEP steady at 600 tok/s, the dense run showed no wait: 600 / 800 = 0.75."""
    pair = derive_pair(DENSE, run("deepep", steady_aggregate_tok_s=m(600.0, "tok/s")))
    assert pair.steady_aggregate_ratio is not None and pair.steady_aggregate_ratio.scalar == 0.75


def test_no_spread_without_a_std_or_a_positive_count() -> None:
    no_std = derive_pair(DENSE, run("deepep", itl_std_ms=None))
    assert no_std.tax_spread_ms is None
    assert "ITL std or count missing in a run; no spread for the tax" in no_std.warnings
    assert derive_pair(DENSE, run("deepep", itl_count=m(0.0, "tokens"))).tax_spread_ms is None
    assert derive_pair(DENSE, run("deepep", itl_count=m(float("nan"), "tokens"))).tax_spread_ms is None


def test_no_ratio_over_a_missing_or_zero_figure() -> None:
    pair = derive_pair(run("dense", aggregate_tok_s=m(0.0, "tok/s")), run("deepep", per_user_tok_s=None))
    assert pair.aggregate_ratio is None and pair.per_user_ratio is None and pair.tax_from_per_user_ms is None


def test_a_run_without_inter_token_latency_is_refused() -> None:
    with pytest.raises(InputError) as err:
        derive_pair(DENSE, run("deepep", itl_ms=None))
    assert_one_line(err.value, "inter_token_latency", "deepep.json has none")


@pytest.mark.parametrize(
    ("changes", "field", "needles"),
    [
        (
            {"model": "deepseek-ai/DeepSeek-V3"},
            "model",
            ["'deepseek-ai/DeepSeek-V3'", "'Qwen/Qwen3-30B-A3B-FP8'"],
        ),
        ({"isl_requested": 2048.0}, "isl", ["2048 is not allowed", "requested ISL 120 (dense.json)"]),
        ({"osl_requested": 256.0}, "osl", ["256 is not allowed", "requested OSL 128"]),
        ({"concurrency": 64}, "concurrency", ["64 is not allowed", "concurrency 32 (dense.json)"]),
    ],
)
def test_runs_of_different_workloads_are_refused(
    changes: dict[str, Any], field: str, needles: list[str]
) -> None:
    """A tax across different models, lengths or loads would be a difference of workloads: the
    refusal names the field, the DeepEP run's value and the dense run's."""
    with pytest.raises(InputError) as err:
        check_pair(DENSE, run("deepep", **changes))
    assert err.value.field == field
    assert_one_line(err.value, f"{field}: ", *needles)


def test_model_names_compare_without_case() -> None:
    assert check_pair(DENSE, run("deepep", model="qwen/qwen3-30b-a3b-fp8")) == []


def test_lengths_known_only_as_measured_means() -> None:
    """No requested OSL in either export: measured means of 128 and 131 are within 5 % (a
    warning says how they were compared); 128 and 140 differ by 8.6 %, refused."""
    a = run("dense", osl_requested=None, osl_measured=m(128.0, "tokens"))
    b = run("deepep", osl_requested=None, osl_measured=m(131.0, "tokens"))
    assert workload_length(a, "osl") == (128.0, False)
    assert check_pair(a, b) == [
        "OSL compared on measured means (128 vs 131): the requested value is not in both exports"
    ]
    with pytest.raises(InputError) as err:
        check_pair(a, run("deepep", osl_requested=None, osl_measured=m(140.0, "tokens")))
    assert_one_line(err.value, "osl: 140 is not allowed", "requested or measured OSL 128")


def test_what_cannot_be_confirmed_is_a_warning() -> None:
    """A model one export leaves out, an unknown length, an unknown load: warnings, not refusals."""
    unknown = run("deepep", model=None, isl_requested=None, concurrency=None)
    assert workload_length(unknown, "isl") == (None, False)
    assert check_pair(DENSE, unknown) == [
        "model not stated by both exports; cannot confirm both runs ran the same",
        "ISL not known for both runs; cannot confirm it matches",
        "concurrency not known for both runs; cannot confirm it matches",
    ]


def test_what_weakens_a_same_workload_pair() -> None:
    """Different engines, swapped leg names, AIPerf versions and request counts, and each run's
    own warnings, named by its role."""
    dense = run("dense", engine="vllm", leg="deepep", leg_label="deepep-epnc8", warnings=["cancelled"])
    deepep = run(
        "deepep",
        engine="sglang",
        leg="dense",
        leg_label="dense-allgather",
        aiperf_version="0.4.0",
        request_count=300,
    )
    assert check_pair(dense, deepep) == [
        "the two runs ran on different engines (vllm vs sglang); the tax then includes engine differences",
        "the dense run is named 'deepep-epnc8'",
        "the DeepEP run is named 'dense-allgather'",
        "different AIPerf versions (0.3.0 vs 0.4.0); metric definitions may differ",
        "different request counts (320 vs 300)",
        "dense run (dense.json): cancelled",
    ]


def test_runs_sorted_into_concurrency_levels() -> None:
    """Ascending levels, input order kept within one; a run with no known concurrency cannot be
    placed and is refused by name."""
    a, b, c = run("a", concurrency=32), run("b", concurrency=4), run("c", concurrency=32)
    assert group_by_concurrency([a, b, c]) == {4: [b], 32: [a, c]}
    assert list(group_by_concurrency([a, b])) == [4, 32]
    with pytest.raises(InputError) as err:
        group_by_concurrency([a, run("lost", concurrency=None)])
    assert_one_line(err.value, "concurrency: ", "lost.json states none")
