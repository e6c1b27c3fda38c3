"""DeepEP's dispatch and combine (`physics/deepep.py`) at the shapes decode runs at: a few
tokens per rank (issue #25).

The kernel on the built-in fit against the small-token references of facts small-token-kernels.md §1
([A2ALL]: 2× p5en, EP16, "DSV4" shape: hidden 4096, top-6 of 256 experts, FP8), read from the
transport catalog rather than typed here, so a row added there is checked too; and, on every
transport at its own reference shape, the cost of one token per rank against 128.
"""

from __future__ import annotations

import pytest

from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.transports import get_transport, load_transports
from deepep_calc.fit.build import built_in_table
from deepep_calc.fit.kernels import kernel_rows
from deepep_calc.physics.deepep import KernelShape, KernelSite, kernel_us

P5EN = get_instance("p5en")
DSV4 = (4096, 6, 256)


def pair(transport: str, tokens: int, comms: int | None = None, qps: int | None = None) -> float:
    """Dispatch + combine of one MoE layer on 2× p5en, EP16, DSV4 shape, at the transport's
    reference settings unless given."""
    t = get_transport(transport)
    k = built_in_table().kernel_constants(t.name, P5EN.name)
    shape = KernelShape(tokens, *DSV4)
    c = t.reference.comms if comms is None else comms
    q = t.reference.qps if qps is None else qps
    return kernel_us(KernelSite(t, P5EN, 8, 16, c, q), shape, k)["total"].scalar


def small_rows() -> list[tuple[str, int, float]]:
    """(transport, tokens, measured D+C us) of every cross-node DSV4-shape row at <= 32 tokens."""
    out = []
    for r in kernel_rows():
        ref = r.ref
        if (ref.hidden, ref.topk, ref.experts) == DSV4 and ref.ep == 16 and ref.tokens <= 32:
            out.append((r.transport.name, ref.tokens, ref.total))
    return out


def test_the_references_are_there() -> None:
    """Four token counts each of DeepEP-V2 (read as efa-gda) and UCCL-EP, as the facts list."""
    rows = small_rows()
    for name in ("efa-gda", "efa-uccl"):
        assert sorted(t for n, t, _ in rows if n == name) == [4, 8, 16, 32]


@pytest.mark.parametrize(("transport", "tokens", "measured"), small_rows())
def test_the_pair_is_within_25_percent_of_every_small_token_row(
    transport: str, tokens: int, measured: float
) -> None:
    model = pair(transport, tokens)
    assert abs(model - measured) / measured <= 0.25, (transport, tokens, model, measured)


PRODUCTION = [
    name
    for name, t in load_transports().items()
    if t.fabric == "efa" and "p5en" in t.instances and t.library != "research"
]


@pytest.mark.parametrize("transport", PRODUCTION)
def test_a_few_tokens_cost_about_the_same_as_one(transport: str) -> None:
    """From 4 to 32 tokens per rank (payload × 8) the pair grows by at most 30 %: leaving the node,
    not the payload, sets it there (measured: UCCL-EP +3 %, DeepEP-V2 +17 %)."""
    assert pair(transport, 32) / pair(transport, 4) <= 1.3


def test_the_128_token_end_still_grows() -> None:
    """The same model is not flat everywhere: at 128 tokens every production transport costs at
    least 1.3x its 4-token pair (measured: DeepEP-V2 1.57x, UCCL-EP 2.18x)."""
    for transport in PRODUCTION:
        assert pair(transport, 128) / pair(transport, 4) >= 1.3, transport


def test_signals_make_more_experts_dearer_at_a_few_tokens() -> None:
    """At 2 tokens per rank, Kimi-K2's 384 experts send 192 signals per operation where
    DeepSeek-V3's 256 send 128. Over the NCCL-GIN proxy at the default EP_EFA_MAX_QPS = 2 the
    issue path binds, so the pair costs more; with the 6 QPs of its references the latency of
    leaving the node still hides them; on one node nothing leaves."""
    t = get_transport("efa-proxy")
    k = built_in_table().kernel_constants(t.name, P5EN.name)

    def at(experts: int, ep: int, qps: int) -> float:
        return kernel_us(KernelSite(t, P5EN, 8, ep, 8, qps), KernelShape(2, 7168, 8, experts), k)[
            "total"
        ].scalar

    assert at(384, 16, 2) > at(256, 16, 2) * 1.02
    assert at(384, 16, 6) == pytest.approx(at(256, 16, 6), rel=1e-9)
    assert at(384, 8, 2) == pytest.approx(at(256, 8, 2), rel=1e-9)


def _kernel(name: str, tokens: float) -> float:
    t = load_transports()[name]
    ref = t.reference
    inst = get_instance(ref.instance)
    shape = KernelShape(tokens, ref.hidden, ref.topk, ref.experts)
    k = built_in_table().kernel_constants(name, inst.name)
    return kernel_us(KernelSite(t, inst, inst.gpus_per_node, ref.ep, ref.comms, ref.qps), shape, k)[
        "total"
    ].scalar


@pytest.mark.parametrize("name", sorted(load_transports()))
def test_one_token_per_rank_costs_well_below_128(name: str) -> None:
    """Across nodes the fixed part is what is left at T -> 0 and the cost per message is real:
    at 1 token per rank every transport's D+C is under half its 128-token figure (measured at the
    DSV4 shape: UCCL-EP 164.7 at 4 tokens vs 359.0 at 128). Inside one node DeepEP 2.x, which the
    `nvlink` transport loads, is nearly flat ([A2ALL]: 95.8 us at 4 tokens, 114.1 at 128)."""
    one, full = _kernel(name, 1.0), _kernel(name, 128.0)
    if name == "nvlink":
        assert 0.6 * full < one < full, (one, full)
    else:
        assert one < 0.5 * full, (one, full)
