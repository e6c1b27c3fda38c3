"""Small plans the plan faces are checked on (`test_plan_chart.py`, `test_plan_terminal.py`,
`test_plan_html.py`): Qwen3-30B-A3B at ISL 120 / OSL 128, TRT-LLM, aggregated layouts, up to two
nodes, so each search takes a fraction of a second. Each is computed once per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from deepep_calc.whatif.plan.search import plan_request, run_plan

SMALL: dict[str, Any] = {
    "layouts": "aggregated",
    "model": "qwen3-30b-a3b",
    "isl": 120,
    "osl": 128,
    "concurrency": 32,
    "instances": "p5en",
    "engines": "trtllm",
    "max_nodes": 2,
}


@cache
def answered() -> Any:
    """32 in flight on p5en, no target: the cheapest configuration answers."""
    return run_plan(plan_request(**SMALL))


@cache
def unmet() -> Any:
    """A per-user floor of 1,000 tok/s: nothing meets it; lowering the floor would."""
    return run_plan(plan_request(**SMALL, slo_tok_s=1000))


@cache
def two_price_kinds(on_purpose: bool) -> Any:
    """p5 (a Capacity Block price) beside p5en (on-demand): ranked apart, or together when asked."""
    extra = {"price_kinds": "all"} if on_purpose else {}
    return run_plan(plan_request(**(SMALL | {"instances": "p5,p5en"} | extra)))


@cache
def by_rate() -> Any:
    """5 requests a second with every kind of target: a floor, a TTFT ceiling and a budget."""
    fields = SMALL | {
        "concurrency": None,
        "request_rate": 5.0,
        "slo_tok_s": 10,
        "ttft_ms": 2000,
        "budget_per_hour": 200,
    }
    return run_plan(plan_request(**fields))
