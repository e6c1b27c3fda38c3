"""estimate/kernel.py: one MoE layer's dispatch + combine for a transport and shape.

The query's refusals (one line naming the option, the value and what is allowed), a published
measurement answering its own query exactly (measured), the model's figures with the kernel
band elsewhere, the JSON, and the references of a kernel point. The cell published four times
over, on every face, is `test_kernel_cells.py`'s.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.transports import get_transport
from deepep_calc.estimate.kernel import kernel_json, kernel_query, point_references
from deepep_calc.fit.build import built_in_table
from deepep_calc.physics.deepep import KernelShape
from one_line import assert_one_line


@pytest.mark.parametrize(
    ("query", "field", "value", "allowed"),
    [
        ({"ep": 0}, "--ep", 0, "a whole number greater than 0"),
        ({"ep": True}, "--ep", True, "a whole number greater than 0"),  # a bool is not a count
        ({"ep": 2.5}, "--ep", 2.5, "a whole number greater than 0"),
        ({"tokens": 65_537}, "--tokens", 65_537, "at most 65,536"),
        ({"qps": 1025}, "--qps", 1025, "at most 1,024"),
        ({"topk": 16, "experts": 8}, "--topk", 16, "at most the expert count (8)"),
        ({"dispatch_dtype": "fp16"}, "--dispatch-dtype", "fp16", "fp8 or bf16"),
        ({"instance": "ib-h200"}, "--instance", "ib-h200", "one of p5, p5en, p6-b200, p6-b300 for efa-proxy"),
        ({"transport": "nvlink", "ep": 16}, "--ep", 16, "at most 8 for nvlink (one node)"),
    ],
)
def test_a_bad_query_is_refused_naming_the_option(
    query: dict[str, Any], field: str, value: Any, allowed: str
) -> None:
    with pytest.raises(InputError) as info:
        kernel_query(**query)
    assert (info.value.field, info.value.value) == (field, value)
    assert_one_line(info.value, field, allowed)


def test_a_calibration_needs_the_reader_the_face_hands_in() -> None:
    """The estimate reads no file itself: a calibration without `read_profile` is a programming
    error, not a user's."""
    with pytest.raises(RuntimeError, match="read_profile"):
        kernel_query(calibration="profile.toml")


def test_the_published_run_at_this_very_query_is_returned_measured() -> None:
    """efa-proxy on p5en, EP16, 128 tokens, EP_EFA_MAX_QPS 6: the gate run's p50s, 185.4 µs
    dispatch and 258.2 µs combine (measured), 443.6 µs together (derived from them)."""
    out = kernel_query(qps=6)
    assert (out["dispatch_us"].value, out["combine_us"].value) == (185.4, 258.2)
    assert out["dispatch_us"].tag is Tag.MEASURED and out["total_us"].tag is Tag.DERIVED
    assert out["total_us"].scalar == pytest.approx(443.6)
    assert set(out["binds"]) == {"dispatch", "combine"} and set(out["parts_us"]) == {"dispatch", "combine"}


def test_elsewhere_the_model_answers_with_the_kernel_band() -> None:
    """At EP_EFA_MAX_QPS 3 no run was published: the model's totals, dispatch + combine, each
    with the kernel misses' band: total / 1.1675 .. total / 0.766."""
    out = kernel_query(qps=3)
    d, c, total = out["dispatch_us"], out["combine_us"], out["total_us"]
    assert total.tag is Tag.ASSUMED and total.scalar == pytest.approx(d.scalar + c.scalar)
    lo, hi = built_in_table().band("kernel")
    assert (total.low, total.high) == (pytest.approx(total.scalar / hi), pytest.approx(total.scalar / lo))


def test_the_json_has_the_totals_the_parts_and_each_run_of_the_point() -> None:
    doc = kernel_json(kernel_query(qps=3))
    assert set(doc) == {"dispatch_us", "combine_us", "total_us", "parts_us", "binds", "measurements"}
    assert doc["total_us"]["tag"] == "assumed" and "low" in doc["total_us"]
    assert sorted(m["total_us"] for m in doc["measurements"]) == [443.6, 623.0, 740.0, 935.0]
    assert all(m["setting"] and m["source"] for m in doc["measurements"])


def test_the_point_references_are_the_runs_of_exactly_that_point() -> None:
    """The reference cell (p5en, EP16, 128 tokens, DeepSeek-V3's shape, FP8) has four runs; one
    token count away, or at BF16 dispatch, none."""
    t, inst = get_transport("efa-proxy"), get_instance("p5en")
    shape = KernelShape(128, 7168, 8, 256, "fp8")
    assert len(point_references(t, inst, 16, shape)) == 4
    assert point_references(t, inst, 16, KernelShape(64, 7168, 8, 256, "fp8")) == []
    assert point_references(t, inst, 16, KernelShape(128, 7168, 8, 256, "bf16")) == []
    assert point_references(t, inst, 32, shape) == []


# The kernel view of an EP group inside one node (issue 10) --------------------------------------


def test_the_kernel_view_names_nvlink_for_an_ep_group_inside_one_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """EP8 on p5en rides NVLink whatever transport is named: the title says so, and its figures
    are the NVLink kernel's, the same for every transport."""
    code, inside, _ = run_cli(capsys, "kernel", "--ep", "8")
    assert code == 0 and inside.startswith("NVLink on p5en, EP8:")
    code, across, _ = run_cli(capsys, "kernel", "--ep", "16")
    assert code == 0 and across.startswith("efa-proxy on p5en, EP16:")
    totals = set()
    for transport in ("efa-proxy", "efa-gda"):
        code, out, _ = run_cli(capsys, "kernel", "--ep", "8", "--transport", transport, "--json")
        totals.add(json.loads(out)["total_us"]["value"])
    assert code == 0 and len(totals) == 1
