"""A first wave that waited for a cold start (`io/aiperf/cold_start.py`), read from an export's
summary statistics alone: in a closed loop of C streams and N requests, a wait W of the first C
requests shows as TTFT max - p50 = W and mean - p50 = C/N x W; the steady-state aggregate is the
output tokens over the duration less W."""

from __future__ import annotations

import math
from typing import Any

import pytest

from calibrate.user_runs import REAL
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.aiperf.cold_start import MIN_SHARE, SIGNATURE_TOLERANCE, ColdStart, cold_start

# The DeepEP c4 run of the calibration pair, as its export states it (ms, s, tokens).
_K1_C4 = {
    "ttft_p50_ms": 210.9484235,
    "ttft_mean_ms": 1375.3852287,
    "ttft_max_ms": 11074.693192,
    "concurrency": 4,
    "requests": 40,
    "duration_s": 79.689913033,
    "output_tokens": 5119.0,
}


def test_a_first_wave_cold_start_is_found_and_left_out_of_the_steady_aggregate() -> None:
    found = cold_start(**_K1_C4)
    assert found is not None
    assert math.isclose(found.wait_s, (11074.693192 - 210.9484235) / 1000.0)
    assert math.isclose(found.steady_aggregate_tok_s, 5119.0 / (79.689913033 - found.wait_s))
    assert "first 4 requests waited 10.9 s" in found.words(4)
    run = load_aiperf(REAL / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_deepep-epnc1_c4_isl120.json")
    assert run.steady_aggregate_tok_s is not None and run.steady_aggregate_tok_s.tag is Tag.DERIVED
    assert math.isclose(run.steady_aggregate_tok_s.scalar, found.steady_aggregate_tok_s)


@pytest.mark.parametrize(
    "change",
    [
        {"ttft_mean_ms": 1900.0},  # the mean says more requests waited than the first wave: no
        {"ttft_mean_ms": 300.0},  # ... or fewer (one slow request, not a wave)
        {"ttft_max_ms": 900.0},  # a wait under 1 % of the run: within the run-to-run spread
        {"concurrency": 40},  # one wave is the whole run
        {"requests": None},  # a statistic the export lacks
        {"duration_s": 5.0},  # a "wait" longer than the run
    ],
)
def test_no_cold_start_without_its_signature(change: dict[str, Any]) -> None:
    assert cold_start(**{**_K1_C4, **change}) is None


# A round wave: 4 streams, 40 requests, p50 100 ms, the first wave 10 s late (max 10,100 ms), so
# the mean is 100 + 4/40 x 10,000 = 1,100 ms; 1,000 tokens in 110 s, 100 s of them steady.
ROUND = {
    "ttft_p50_ms": 100.0,
    "ttft_mean_ms": 1100.0,
    "ttft_max_ms": 10_100.0,
    "concurrency": 4,
    "requests": 40,
    "duration_s": 110.0,
    "output_tokens": 1000.0,
}


def test_a_round_wave_is_found_exactly() -> None:
    found = cold_start(**ROUND)
    assert found == ColdStart(wait_s=10.0, steady_aggregate_tok_s=10.0)  # 1,000 tokens / 100 s
    assert found.words(4) == (
        "the first 4 requests waited 10.0 s for their first token (a cold start: TTFT max against "
        "p50, and a mean raised by that one wave)"
    )


@pytest.mark.parametrize(
    ("mean_ms", "found"),
    [
        (1100.0 + 0.99 * SIGNATURE_TOLERANCE * 1000.0, True),
        (1100.0 + 1.01 * SIGNATURE_TOLERANCE * 1000.0, False),
    ],
)
def test_the_mean_may_miss_one_wave_by_the_tolerance(mean_ms: float, found: bool) -> None:
    """One wave raises the mean by 1,000 ms here: within 10 % of it (100 ms) it is that wave."""
    assert (cold_start(**{**ROUND, "ttft_mean_ms": mean_ms}) is not None) is found


def test_a_wait_under_one_percent_of_the_run_is_no_cold_start() -> None:
    """At MIN_SHARE (1 %) of 110 s a wait of 1.1 s counts; just under it does not. The mean
    moves with the wait, so each case is one clean wave."""
    assert MIN_SHARE == 0.01

    def wave(wait_ms: float) -> dict[str, Any]:
        return {**ROUND, "ttft_max_ms": 100.0 + wait_ms, "ttft_mean_ms": 100.0 + wait_ms / 10}

    assert cold_start(**wave(1100.0)) is not None
    assert cold_start(**wave(1099.0)) is None
    assert math.isclose(cold_start(**wave(1100.0)).steady_aggregate_tok_s, 1000.0 / (110.0 - 1.1))
