"""A run whose first wave of requests waited for a cold start, read from its export's statistics.

Why a module of its own: the catalog's steady-state aggregates are derived by this rule from
the shared exports (`tests/accuracy/test_validate.py` holds the two equal), and `calibrate` applies the
same rule to a user's runs, so the rule is written once.

The signature, from the summary statistics alone (an export carries no per-request timeline):
in a closed-loop benchmark of C streams and N requests, if the first C requests waited W for
their first token and no other request did, the slowest first token is the typical one plus W
(max - p50 = W) and the mean is raised by C / N of it (mean - p50 = C/N x W). Both hold in every
TRT-LLM export of the catalog (the DeepEP c4 run waited 10.9 s); a wait spread over the run
(vLLM's c32 runs) fails the second test. The benchmark's duration includes W with every stream
idle, so the steady-state aggregate is output tokens / (duration - W).
"""

from __future__ import annotations

from dataclasses import dataclass

SIGNATURE_TOLERANCE = 0.10  # mean - p50 within 10 % of C/N x (max - p50): one wave, nothing else
MIN_SHARE = 0.01  # waits under 1 % of the run are within the cells' run-to-run spread (0.7-1.8 %)


@dataclass(frozen=True)
class ColdStart:
    wait_s: float  # the first wave's wait for its first token
    steady_aggregate_tok_s: float  # output tokens / (benchmark duration - wait)

    def words(self, concurrency: int) -> str:
        return (
            f"the first {concurrency} requests waited {self.wait_s:.1f} s for their first token "
            "(a cold start: TTFT max against p50, and a mean raised by that one wave)"
        )


# size: keyword-only, each argument one summary statistic of an export, so callers name what they pass
def cold_start(
    *,
    ttft_p50_ms: float | None,
    ttft_mean_ms: float | None,
    ttft_max_ms: float | None,
    concurrency: int | None,
    requests: int | None,
    duration_s: float | None,
    output_tokens: float | None,
) -> ColdStart | None:
    """The first wave's cold start, when the statistics show one that matters; else None."""
    known = (ttft_p50_ms, ttft_mean_ms, ttft_max_ms, concurrency, requests, duration_s, output_tokens)
    if any(v is None for v in known):
        return None
    assert ttft_p50_ms is not None and ttft_mean_ms is not None and ttft_max_ms is not None
    assert concurrency is not None and requests is not None
    assert duration_s is not None and output_tokens is not None
    if not 0 < concurrency < requests or duration_s <= 0 or output_tokens <= 0:
        return None
    wait_ms = ttft_max_ms - ttft_p50_ms
    wait_s = wait_ms / 1000.0
    if wait_s < MIN_SHARE * duration_s or wait_s >= duration_s:
        return None
    one_wave = concurrency / requests * wait_ms
    if abs((ttft_mean_ms - ttft_p50_ms) - one_wave) > SIGNATURE_TOLERANCE * one_wave:
        return None
    return ColdStart(wait_s, output_tokens / (duration_s - wait_s))
