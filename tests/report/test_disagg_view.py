"""`report/disagg_view.py`: the disaggregated deployment as every face shows it, built from
`Result.to_json()["disaggregated"]`: each side's layout in words, the rows of both sides, the
deployment's own figures, where a request's time goes and the run blocks.

The wording and arithmetic are checked on small dicts worked by hand; `page_rows` on a real
1P3D deployment of DeepSeek-V3.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.report import disagg_view


def side(**fields: Any) -> dict[str, Any]:
    return {
        "arm": "deepep",
        "transport": "efa-proxy",
        "nodes": 2,
        "cuda_graphs": False,
        "chosen": "given",
    } | fields


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({}, "DeepEP over efa-proxy, eager"),
        ({"nodes": 1}, "DeepEP over NVLink, eager"),  # one node: DeepEP rides NVLink
        (
            {"arm": "tp", "cuda_graphs": True, "chosen": "the model's best"},
            "tensor parallel, CUDA graphs (best by the model)",
        ),
        ({"arm": "allgather"}, "allgather, eager"),
        ({"arm": "something-new"}, "something-new, eager"),
    ],
)
def test_a_side_says_its_layout_mode_and_how_it_was_chosen(fields: dict[str, Any], words: str) -> None:
    assert disagg_view.side_arm_text(side(**fields)) == words


def test_bytes_read_as_megabytes_and_fractions_as_percent() -> None:
    q = {"value": 2_500_000, "unit": "B", "tag": "derived", "source": "s"}
    assert disagg_view.megabytes(q) == {"value": 2.5, "unit": "MB", "tag": "derived", "source": "s"}
    assert disagg_view.percent({"value": 0.25, "unit": "1", "tag": "assumed"})["value"] == 25.0
    assert disagg_view.percent({"value": 0.25, "unit": "1", "tag": "assumed"})["unit"] == "%"


def balance(idle_side: str, bottleneck: str) -> dict[str, Any]:
    return {
        "idle_fraction": {"value": 0.75, "tag": "assumed"},
        "idle_side": idle_side,
        "bottleneck": bottleneck,
        "balanced_prefill_per_decode": {"value": 1 / 3},
    }


def test_the_balance_says_what_sets_the_throughput_and_which_side_has_room() -> None:
    assert disagg_view.balance_words(balance("prefill", "decode")) == (
        "throughput set by the decode side's running limit; the prefill side idle 75% of the time "
        "[assumed]; the sides balance at 0.33 prefill nodes per decode node"
    )
    decode = disagg_view.balance_words(balance("decode", "transfer"))
    assert decode.startswith("throughput set by the KV links; the decode side has unused batch room 75%")
    assert disagg_view.balance_words(balance("prefill", "a new limit")).startswith(
        "throughput set by a new limit;"
    )
    assert set(disagg_view.BOTTLENECK) == {"clients", "prefill", "decode", "transfer"}


def split(osl: int | None) -> dict[str, Any]:
    parts = {"queue": 0.0, "prefill": 60.0, "transfer": 10.0, "first_decode": 30.0}
    return {
        "ttft_parts_ms": {k: {"value": v, "tag": "assumed", "source": k} for k, v in parts.items()},
        "tpot_ms": {"value": 30.0, "tag": "derived"},
        "osl": osl,
    }


def test_a_requests_time_is_its_ttft_parts_then_the_other_output_tokens() -> None:
    """TTFT 0 + 60 + 10 + 30 = 100 ms; OSL 4 leaves 3 tokens at 30 ms: 90 ms; 190 ms in all."""
    rows = disagg_view.time_split(split(4))
    assert [r["key"] for r in rows] == ["queue", "prefill", "transfer", "first_decode", "decode"]
    assert [r["ms"] for r in rows] == [0.0, 60.0, 10.0, 30.0, 90.0]
    assert [round(r["share"], 4) for r in rows] == [
        0.0,
        round(60 / 190, 4),
        round(10 / 190, 4),
        round(30 / 190, 4),
        round(90 / 190, 4),
    ]
    assert rows[-1]["source"] == "(OSL - 1) x TPOT" and rows[-1]["tag"] == "derived"
    assert disagg_view.time_split(split(None))[-1]["ms"] == 0.0  # no OSL: no other tokens


def test_nothing_to_split_gives_zero_shares_not_a_division_by_zero() -> None:
    d = split(1)
    for q in d["ttft_parts_ms"].values():
        q["value"] = None  # a part the estimate could not give
    assert [r["share"] for r in disagg_view.time_split(d)] == [0.0] * 5


def test_run_blocks_are_the_flags_blocks_without_trailing_newlines() -> None:
    flags = {
        "disaggregated": {"blocks": [{"caption": "prefill server", "lang": "sh", "text": "serve --x\n\n"}]}
    }
    assert disagg_view.blocks(flags) == [("prefill server", "sh", "serve --x")]
    assert disagg_view.blocks({}) == [] and disagg_view.blocks({"disaggregated": None}) == []


@cache
def _disaggregated() -> dict[str, Any]:
    return evaluate(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=3)).to_json()


def test_the_page_rows_of_a_1p3d_deployment() -> None:
    data = _disaggregated()
    rows = disagg_view.page_rows(data)
    assert rows is not None
    assert (
        rows["title"] == f"1P3D: 1 prefill + 3 decode nodes, KV over {data['disaggregated']['kv_transport']}"
    )
    assert [r["label"] for r in rows["sides"]] == [
        label for label, _, _ in disagg_view.side_rows(data["disaggregated"])
    ]
    nodes = next(r for r in rows["sides"] if r["label"] == "nodes")
    assert nodes["cells"] == [{"text": "1"}, {"text": "3"}]
    busy = next(r for r in rows["sides"] if r["label"] == "busy")
    assert all(c["q"]["unit"] == "%" and c["digits"] == 0 for c in busy["cells"])
    step = next(r for r in rows["sides"] if r["label"] == "step")
    assert all(c["digits"] == 1 for c in step["cells"])  # milliseconds at one decimal
    assert sum(r["share"] for r in rows["time"]) == pytest.approx(1.0)
    assert rows["balance"][0].isupper() and rows["coverage"][0].isupper()
    labels = [label for label, _, _ in disagg_view.headline_rows(data["disaggregated"])]
    assert [f["label"] for f in rows["figures"]] == labels and "KV per request" in labels
    kv = next(f for f in rows["figures"] if f["label"] == "KV per request")
    assert kv["q"]["unit"] == "MB"


def test_an_aggregated_result_has_no_page_rows() -> None:
    assert disagg_view.page_rows({"disaggregated": None}) is None
    assert disagg_view.page_rows({}) is None
