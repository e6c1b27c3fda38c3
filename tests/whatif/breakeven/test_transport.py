"""(d) Where the transport stops being issue-bound (`whatif/breakeven/transport.py`):
EP_NUM_COMMS against the proxy fit and the bandwidth curve, EP_EFA_MAX_QPS against the kernel's
pipes; whole settings are rounded up and say so."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from deepep_calc.fit.build import built_in_table
from deepep_calc.physics.deepep import scaleout_bw
from deepep_calc.question.scenario import Resolved, Scenario
from deepep_calc.whatif.breakeven import transport as breakeven_transport
from deepep_calc.whatif.breakeven.capacity import ep_nodes
from deepep_calc.whatif.breakeven.search import Answer
from deepep_calc.whatif.breakeven.transport import comms_bandwidth, comms_proxy, issue_bound, qps_kernel

from .scenarios import GDA, KIMI, _r


def test_comms_proxy_lane_share_equals_fixed_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """K* = proxy_lane_us / proxy_fixed_us: beyond it the part more comms divide is the smaller."""
    r = _r(Scenario(engine="vllm"))
    fit = built_in_table().engine("vllm", False)
    answer = comms_proxy(r)
    k = answer.check["solution"]  # the exact root; the value is the whole setting above it
    assert fit.proxy_lane_us.scalar / k.scalar == pytest.approx(fit.proxy_fixed_us.scalar, rel=1e-9)
    assert answer.value is not None and answer.value.scalar == math.ceil(k.scalar)
    sglang = comms_proxy(_r(Scenario(engine="sglang")))  # its fit: the fixed part is the larger
    assert built_in_table().engine("sglang", False).proxy_lane_us.scalar < fit.proxy_lane_us.scalar
    assert sglang.value is None and sglang.note.startswith("Not issue-bound at any setting")
    none = replace(fit, proxy_fixed_us=fit.proxy_fixed_us * 0.0)  # no fixed part at all
    table = built_in_table().with_engine("vllm", False, none)
    monkeypatch.setattr(breakeven_transport, "table_for", lambda _r: table)
    zero = comms_proxy(_r(Scenario(engine="vllm")))
    assert zero.value is None and zero.note.startswith("Never up to EP_NUM_COMMS=")
    assert comms_proxy(_r(GDA)).value is None  # GPU-initiated: not applicable
    graphs = comms_proxy(_r(Scenario(engine="vllm", cuda_graphs=True)))
    assert graphs.value is None and "CUDA graphs" in graphs.note


def test_comms_bandwidth_reaches_line_rate() -> None:
    r = _r(Scenario())
    answer = comms_bandwidth(r)
    k = answer.check["solution"].scalar
    assert answer.value.scalar == math.ceil(k)  # whole comms, rounded up: the line rate is reached there
    line = r.instance.net_gb_s_per_gpu(r.gpus_per_node).scalar
    bw_at = scaleout_bw(r.transport, r.instance, r.gpus_per_node, k).scalar
    bw_below = scaleout_bw(r.transport, r.instance, r.gpus_per_node, 0.9 * k).scalar
    assert bw_at == pytest.approx(line, rel=0.01)
    assert bw_below < 0.99 * line


def test_qps_issue_bound_at_every_modelled_qp_over_the_proxy() -> None:
    """The proxy's per-selection cost is fitted where its reference is issue-bound, and both
    the issue pipe and the wire scale with remote selections: issue-bound at any load, so
    more queue pairs help up to the reference's count."""
    r = _r(KIMI)
    answer = qps_kernel(r)
    assert answer.value is None and "every QP count" in answer.note
    assert issue_bound(r, np.array([1.0, 2.0, 6.0])).all()
    c = answer.check
    assert c["kernel_us"].scalar > c["issue_free_us"].scalar
    assert qps_kernel(_r(GDA)).value is None


def test_kernel_is_issue_bound_at_every_modelled_qp_when_lanes_saturate() -> None:
    """At 128 tokens per rank (concurrency 2048 on 16 ranks) the proxy's issue path binds up to
    the reference's 6 QPs; at the default scenario's 2 tokens per rank the latency of leaving
    the node binds from 2 QPs on, so a higher cap would not shorten the kernel there."""
    answer = qps_kernel(_r(Scenario(concurrency=2048)))
    assert answer.value is None and "every QP count" in answer.note
    small = qps_kernel(_r(Scenario()))
    assert small.value is not None and small.value.scalar == 2.0
    assert "leaving the node" in small.note


def test_whole_settings_are_rounded_up_and_say_so() -> None:
    """EP_NUM_COMMS 14.8 is not a setting: the answer is 15, where the curve has reached line rate."""
    answer = comms_bandwidth(_r(Scenario()))
    assert answer.value is not None and answer.value.scalar == 15
    assert answer.check["solution"].scalar == pytest.approx(14.8, abs=0.05)
    assert answer.note.startswith("From EP_NUM_COMMS=15 (14.8 rounded up)")
    nodes = ep_nodes(_r(Scenario()))
    assert nodes.note.startswith("DeepEP fits from 1 node:")
    json.dumps(answer.to_json(), allow_nan=False)
    assert answer.to_json()["short"] == ""


@pytest.mark.parametrize(
    ("scenario", "answer", "note"),
    [
        (GDA, comms_proxy, "Not applicable: efa-gda is GPU-initiated (no host proxy)."),
        (GDA, comms_bandwidth, "Not applicable: efa-gda's bandwidth does not depend on EP_NUM_COMMS."),
        (GDA, qps_kernel, "Not applicable: the QP cap does not enter efa-gda's issue model."),
        (
            Scenario(transport="efa-uccl"),
            comms_proxy,
            "Not applicable: efa-uccl has a proxy that ignores EP_NUM_COMMS.",
        ),
        (Scenario(nodes=1), comms_proxy, "Not applicable: one node, no scale-out proxy."),
        (Scenario(nodes=1), comms_bandwidth, "Not applicable: one node, no scale-out traffic."),
        (Scenario(nodes=1), qps_kernel, "Not applicable: one node, no scale-out issue path."),
    ],
    ids=[
        "gda-comms",
        "gda-bandwidth",
        "gda-qps",
        "uccl-comms",
        "one-node-comms",
        "one-node-bw",
        "one-node-qps",
    ],
)
def test_a_knob_the_transport_does_not_read_has_no_answer_and_says_why(
    scenario: Scenario, answer: Callable[[Resolved], Answer], note: str
) -> None:
    """GPU-initiated transports have no proxy, UCCL's proxy ignores EP_NUM_COMMS, the QP cap
    enters only the NCCL-GIN proxy's issue model, and one node has no scale-out path at all."""
    a = answer(_r(scenario))
    assert a.value is None and a.short == "not applicable" and a.note == note
