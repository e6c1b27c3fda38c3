"""Kernel constants from kernel references (`fit/kernels.py`): NVLink per library, each
transport's leaving latency and cost per message, the fabric's shared costs, the fallbacks,
and the instance factors. Then on the catalog's references: each transport's pooled betas are
the least-squares point of the log error, a transport whose designated reference is left out
refits from its others, and a changed transport figure (a what-if) is refitted against.

Synthetic references on p5en (8 GPUs, NVLink 450 GB/s per direction) at DeepSeek's shape (hidden
7168, top-8 of 256, FP8): one selection moves 7,408 B out and 14,336 B back, 21,744 B in all.
Where a fit must give constants back, the figures are generated from them first.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from deepep_calc.accuracy.validate import kernel_prediction
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.constants import CATALOG, Assumptions
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.transports import KernelRef, Transport, get_transport, load_transports
from deepep_calc.fit.build import built_in_table, fit_kernels
from deepep_calc.fit.kernel_solve import figures, terms
from deepep_calc.fit.kernels import (
    KernelRow,
    Leaving,
    class_of,
    fallback_transport,
    fit_instance_factors,
    fit_nvlink,
    fit_rows,
    fit_transport,
    fit_transport_rows,
    fixed_prior,
    kernel_rows,
    leaving_costs,
    nvlink_bytes_mb,
    nvlink_rows,
    reference_lanes,
    spans_tokens,
)
from deepep_calc.fit.table import NvlinkFit, TransportFit
from deepep_calc.physics.deepep import KernelShape, KernelSite, kernel_us
from invariant_checks import kernel_log_loss

GDA = get_transport("efa-gda")  # EFA, GPU-initiated, DeepEP 2.x, 1 issue lane, 0.95 of line rate
UCCL = get_transport("efa-uccl")  # EFA, host proxy, UCCL-EP, 4 issue lanes
NVLINK = get_transport("nvlink")  # DeepEP 2.x inside one node


def d(value: float, unit: str = "us") -> Q:
    return Q.derived(value, unit, f"hand {value}")


def row(t: Transport, **ref: Any) -> KernelRow:
    """A reference of `t` on p5en at DeepSeek's shape (128 tokens, EP16 unless given)."""
    fields: dict[str, Any] = {"instance": "p5en", "ep": 16, "source": "hand", **ref}
    if not any(k in fields for k in ("dispatch_us", "total_us")):
        fields["total_us"] = 100.0
    return KernelRow(t, KernelRef(**fields))


def fit(
    leave: tuple[float, float], beta: tuple[float, float] = (0.5, 0.25), ratio: float = 1.0
) -> TransportFit:
    return TransportFit(d(leave[0]), d(leave[1]), d(beta[0]), d(beta[1]), 1.0, d(ratio, ""))


NVL = {lib: NvlinkFit(d(30.0), d(0.5, "")) for lib in {t.library for t in load_transports().values()}}
LEAVING = {"efa": Leaving(d(20.0), d(10.0), d(0.5, "")), "ib": Leaving(d(10.0), d(5.0), d(0.5, ""))}


# the rows ------------------------------------------------------------------------------------


def test_a_row_is_inside_one_node_when_its_ep_fits_one() -> None:
    assert row(GDA, ep=8).one_node and not row(GDA, ep=16).one_node
    assert row(NVLINK, ep=16).one_node  # the NVLink transport never leaves the node


def test_a_rows_key_names_its_transport_point_and_source() -> None:
    assert row(GDA, tokens=4, source="[A2ALL]").key == "efa-gda|efa-gda @ p5en EP16 4 tok|[A2ALL]"


def test_every_catalog_reference_is_a_row_with_its_transport() -> None:
    """One row per reference of every transport; under a changed figure the rows of that
    transport carry it, the others the catalog's."""
    rows = kernel_rows()
    assert len(rows) == sum(len(t.references()) for t in load_transports().values())
    changed = kernel_rows(CATALOG.with_values({"transport:efa-gda:wire_efficiency": 0.5}))
    assert {r.transport.wire_efficiency for r in changed if r.transport.name == "efa-gda"} == {0.5}
    assert {r.transport.wire_efficiency for r in changed if r.transport.name == "efa-uccl"} == {0.9}


# 1. NVLink ------------------------------------------------------------------------------------


def test_nvlink_bytes_of_a_reference() -> None:
    """128 × 8 = 1,024 selections; on one node (EP8) 7 of 8 peers are NVLink: 896 × 21,744 B =
    19.482624 MB; across two nodes (EP16) 7 of 16: 448 × 21,744 B = 9.741312 MB."""
    assert nvlink_bytes_mb(row(GDA, ep=8).ref) == pytest.approx(19.482624, rel=1e-13)
    assert nvlink_bytes_mb(row(GDA, ep=16).ref) == pytest.approx(9.741312, rel=1e-13)


def test_only_in_scope_low_latency_rows_inside_one_node_fit_nvlink() -> None:
    keep = row(GDA, ep=8)
    rows = [keep, row(GDA, ep=8, in_scope=False), row(GDA, ep=8, prefill=True), row(GDA, ep=16)]
    assert nvlink_rows(rows) == [keep]


# At peak NVLink one node moves a 128-token row's 19.482624 MB in 19.482624 / 450 = 43.29472 us,
# a 32-token row's in a quarter of that.
PEAK_US = {128: 19.482624 / 450 * 1e3, 32: 19.482624 / 450 * 1e3 / 4}


def one_node(
    t: Transport, alpha: float, efficiency: float, tokens: tuple[int, ...] = (32, 128)
) -> list[KernelRow]:
    """One-node rows of `t` whose totals are alpha + bytes / (NVLink x efficiency)."""
    return [row(t, ep=8, tokens=n, total_us=alpha + PEAK_US[n] / efficiency) for n in tokens]


def test_a_librarys_nvlink_constants_from_its_one_node_rows() -> None:
    """Totals 50 + 2 × 10.82368 and 50 + 2 × 43.29472 us give back alpha 50 us and efficiency
    0.5; every library the catalog loads but the rows never measured takes DeepEP 2.x's, assumed."""
    fits = fit_nvlink(one_node(NVLINK, 50.0, 0.5))
    v2 = fits["deepep-v2"]
    assert v2.alpha_us.scalar == pytest.approx(50.0, rel=1e-9) and v2.efficiency.scalar == pytest.approx(
        0.5, rel=1e-9
    )
    assert (
        v2.alpha_us.tag is Tag.DERIVED
        and "fitted to 2 one-node deepep-v2 rows at 2 token counts" in v2.alpha_us.source
    )
    assert set(fits) == {t.library for t in load_transports().values()}
    v1 = fits["deepep-v1"]
    assert v1.alpha_us.scalar == v2.alpha_us.scalar and v1.alpha_us.tag is Tag.ASSUMED
    assert "no one-node deepep-v1 measurement" in v1.alpha_us.source


def test_a_library_measured_at_one_byte_count_takes_the_others_efficiency() -> None:
    """UCCL-EP at 128 tokens only, 100 and 110 us: its efficiency is the median of the fitted
    libraries' (0.5), its alpha the mean of t − bytes / 0.5 = 105 − 86.58944 = 18.41056 us."""
    rows = one_node(NVLINK, 50.0, 0.5) + [row(UCCL, ep=8, total_us=t) for t in (100.0, 110.0)]
    uccl = fit_nvlink(rows)["uccl-ep"]
    assert uccl.efficiency.scalar == pytest.approx(0.5, rel=1e-9) and uccl.efficiency.tag is Tag.ASSUMED
    assert uccl.alpha_us.scalar == pytest.approx(105.0 - 2 * PEAK_US[128], rel=1e-9)


def test_no_deepep_2_row_falls_back_to_96_us() -> None:
    """With UCCL-EP's rows alone (alpha 40, efficiency 0.8), DeepEP 2.x falls back to 96 us at
    the median efficiency of what was fitted."""
    v2 = fit_nvlink(one_node(UCCL, 40.0, 0.8))["deepep-v2"]
    assert v2.alpha_us.scalar == 96.0 and v2.alpha_us.tag is Tag.ASSUMED
    assert v2.efficiency.scalar == pytest.approx(0.8, rel=1e-9)


def test_an_efficiency_above_the_nvlink_peak_is_held_at_it() -> None:
    """Rows faster than NVLink's peak (alpha 50 at efficiency 2): efficiency 1, and alpha a
    weighted mean of what each row leaves after its bytes at peak, t − bytes: between 28.35 and
    45.59 us."""
    rows = one_node(NVLINK, 50.0, 2.0)
    v2 = fit_nvlink(rows)["deepep-v2"]
    assert v2.efficiency.scalar == 1.0
    left = [r.ref.total - PEAK_US[r.ref.tokens] for r in rows]
    assert min(left) <= v2.alpha_us.scalar <= max(left)


# 2. Across nodes ------------------------------------------------------------------------------


def test_a_transports_cross_node_rows() -> None:
    own = row(GDA, tokens=4)
    rows = [own, row(GDA, ep=8), row(GDA, prefill=True), row(GDA, in_scope=False), row(UCCL)]
    assert fit_rows(GDA, rows) == [own]
    assert fit_rows(NVLINK, [row(NVLINK)]) == []


def test_a_fixed_term_needs_a_few_tokens_and_128_or_more() -> None:
    def spans(*tokens: int) -> bool:
        return spans_tokens([row(GDA, tokens=n) for n in tokens])

    assert spans(32, 128) and spans(4, 512)
    assert not spans(33, 128) and not spans(4, 127) and not spans()


def test_reference_lanes() -> None:
    """Fixed lanes: 1 for efa-gda, 4 for UCCL-EP. The NCCL-GIN proxy: (K × QPs)^0.68 at its
    reference's 8 comms and 6 QPs, 48^0.68."""
    assert reference_lanes(GDA) == 1.0 and reference_lanes(UCCL) == 4.0
    assert reference_lanes(get_transport("efa-proxy")) == pytest.approx(48**0.68, rel=1e-12)


def test_the_fabrics_leaving_costs_are_the_mean_of_its_pinned_transports() -> None:
    """EFA: efa-gda 20 / 10 us (signal 0.5) and UCCL-EP 40 / 30 (1.5): 30 / 20, 1.0. InfiniBand's
    fits do not enter; its costs are EFA's × the one-way latencies' ratio, 5 / 10 = 0.5."""
    fits = {
        "efa-gda": (GDA, fit((20.0, 10.0), ratio=0.5)),
        "efa-uccl": (UCCL, fit((40.0, 30.0), ratio=1.5)),
        "ib-ibgda": (get_transport("ib-ibgda"), fit((100.0, 100.0))),
    }
    out = leaving_costs(fits, CATALOG)
    efa, ib = out["efa"], out["ib"]
    assert [efa.dispatch_us.scalar, efa.combine_us.scalar, efa.signal_ratio.scalar] == [30.0, 20.0, 1.0]
    assert efa.dispatch_us.tag is Tag.DERIVED and "mean over efa-gda, efa-uccl" in efa.dispatch_us.source
    assert [ib.dispatch_us.scalar, ib.combine_us.scalar, ib.signal_ratio.scalar] == [15.0, 10.0, 1.0]
    halved = leaving_costs(fits, CATALOG.with_values({"ib_one_way_us": 2.0}))["ib"]
    assert halved.dispatch_us.scalar == pytest.approx(6.0, rel=1e-13)  # 30 x 2 / 10


def test_without_a_pinned_transport_the_latency_facts_stand_in() -> None:
    """No EFA fit: EFA's one-way latency (10 us) for both directions and a signal at the catalog's
    ratio (1); InfiniBand's 5 us. A fit's assumed leaving latency makes the mean assumed, and
    a negative mean is held at 0."""
    out = leaving_costs({}, CATALOG)
    assert [out["efa"].dispatch_us.scalar, out["efa"].combine_us.scalar, out["efa"].signal_ratio.scalar] == [
        10.0,
        10.0,
        1.0,
    ]
    assert out["ib"].dispatch_us.scalar == 5.0
    weak = replace(fit((-4.0, 2.0)), leaving_dispatch_us=Q.assumed(-4.0, "us", "x"))
    mean = leaving_costs({"efa-gda": (GDA, weak)}, CATALOG)["efa"]
    assert mean.dispatch_us.scalar == 0.0 and mean.dispatch_us.tag is Tag.ASSUMED


def test_the_fixed_prior_of_a_transport_the_references_cannot_pin() -> None:
    """The fabric's leaving costs (20 / 10 us); with a measured small-message floor, the floor
    less the library's local part where it is higher: NVSHMEM's 216.3 − 30 / 2 = 201.3 us both
    ways (assumed)."""
    dispatch, combine = fixed_prior(GDA, NVL, LEAVING)
    assert (dispatch, combine) == (LEAVING["efa"].dispatch_us, LEAVING["efa"].combine_us)
    nvshmem = get_transport("efa-nvshmem")
    assert nvshmem.fixed_floor_us == 216.3
    floored = fixed_prior(nvshmem, NVL, LEAVING)
    assert [q.scalar for q in floored] == pytest.approx([201.3, 201.3], rel=1e-13)
    assert all(q.tag is Tag.ASSUMED and "less the library's local part" in q.source for q in floored)
    low = fixed_prior(nvshmem.copy(**{"fixed_floor_us": 30.0}), NVL, LEAVING)
    assert [q.scalar for q in low] == [20.0, 15.0]  # 30 − 15 is below 20, above 10


def generated(t: Transport, tokens: int, truth: Any) -> KernelRow:
    """A cross-node row of `t` at hidden 2048 (2,128 B out, 4,096 back: the wire stays below the
    issue path) whose dispatch and combine are the model's at `truth`."""
    blank = row(t, tokens=tokens, hidden=2048, dispatch_us=1.0, combine_us=1.0)
    x = terms(t, blank.ref, NVL[t.library], 1.0, reference_lanes(t))
    (dm, _), (cm, _) = figures(x, truth)
    return row(t, tokens=tokens, hidden=2048, dispatch_us=dm, combine_us=cm)


def test_rows_spanning_two_token_counts_fit_every_constant() -> None:
    """efa-gda rows at 4, 16, 128 and 512 tokens generated at leaving 100 / 80 us, 0.2 us per
    message and a signal at 2 puts (128 signals: at 4 tokens the issue path takes 0.2 × (16 +
    256) = 54.4 us, under the leaving latency; at 128, 0.2 × (512 + 256) = 153.6 us, over it).
    The fit gives back the leaving latencies, and a cost per message and signal ratio that
    reproduce every figure within 1.5 %: its coordinate descent stops after 8 rounds, short of
    the exact pair along the valley where β × (data + r × signals) is constant (β 0.204, r 1.85
    today). Its constants are derived and name the rows."""
    truth = ((100.0, 80.0), (0.2, 0.2), 2.0)
    rows = [generated(GDA, n, truth) for n in (4, 16, 128, 512)]
    got = fit_transport_rows(GDA, rows, NVL, None, lambda _: d(1.0, ""), CATALOG)
    leaving = (got.leaving_dispatch_us.scalar, got.leaving_combine_us.scalar)
    assert leaving == pytest.approx((100.0, 80.0), rel=1e-5)
    p = (leaving, (got.beta_dispatch_us.scalar, got.beta_combine_us.scalar), got.signal_ratio.scalar)
    for r in rows:
        x = terms(GDA, r.ref, NVL[GDA.library], 1.0, reference_lanes(GDA))
        assert all(abs(m / published - 1) < 0.015 for m, published in figures(x, p)), r.ref.tokens
    assert got.beta_dispatch_us.scalar == pytest.approx(0.2, rel=0.05)
    assert got.beta_dispatch_us.tag is Tag.DERIVED
    assert "least squares on the log error of 4 references" in got.beta_dispatch_us.source
    assert got.residual_us == ()  # residuals are kept for a transport fitted to one row


def test_rows_at_one_token_count_fit_the_cost_per_message_under_the_fabrics_latency() -> None:
    """128 and 512 tokens only: the leaving latency is the fabric's prior (20 / 10 us) and the
    signal ratio its (0.5); the costs per message are fitted to the rows."""
    rows = [generated(GDA, n, ((20.0, 10.0), (0.5, 0.25), 0.5)) for n in (128, 512)]
    got = fit_transport_rows(GDA, rows, NVL, LEAVING, lambda _: d(1.0, ""), CATALOG)
    assert (
        got.leaving_dispatch_us is LEAVING["efa"].dispatch_us
        and got.signal_ratio is LEAVING["efa"].signal_ratio
    )
    assert [got.beta_dispatch_us.scalar, got.beta_combine_us.scalar] == pytest.approx([0.5, 0.25], rel=1e-4)


def test_the_prior_never_exceeds_what_the_fastest_reference_leaves() -> None:
    """A fabric latency of 500 us against a row of dispatch 300, combine 500 (local 15): capped
    at 300 − 15 = 285 and 500 − 15 = 485; one row, two figures: the costs per message are exact
    and the residuals (model − measured) are 0."""
    slow = {"efa": Leaving(d(500.0), d(500.0), d(0.5, ""))}
    one = [row(GDA, dispatch_us=300.0, combine_us=500.0)]
    got = fit_transport_rows(GDA, one, NVL, slow, lambda _: d(1.0, ""), CATALOG)
    assert [got.leaving_dispatch_us.scalar, got.leaving_combine_us.scalar] == [285.0, 485.0]
    assert "capped by the fastest reference" in got.leaving_dispatch_us.source
    assert got.residual_us == pytest.approx((0.0, 0.0), abs=1e-6)


def test_a_kernel_log_refits_the_cost_per_message_alone() -> None:
    """One log of efa-gda at its reference point, 10 % slower than the built-in fit's figures:
    the leaving latency and signal ratio stay the table's, the costs per message rise to
    reproduce it (residuals 0); a weak log gives assumed costs."""
    table = built_in_table()
    base = table.transports["efa-gda"]
    k = table.kernel_constants("efa-gda", "p5en")
    x = terms(GDA, GDA.reference, table.nvlink_fit(GDA.library), 1.0, base.reference_lanes)
    leaving = (k.leaving_dispatch_us.scalar, k.leaving_combine_us.scalar)
    p = (leaving, (k.beta_dispatch_us.scalar, k.beta_combine_us.scalar), k.signal_ratio.scalar)
    point = GDA.reference.copy(**{"dispatch_us": 1.0, "combine_us": 1.0, "total_us": None})
    (dm, _), (cm, _) = figures(replace(x, ref=point), p)
    log = GDA.reference.copy(
        **{"dispatch_us": 1.1 * dm, "combine_us": 1.1 * cm, "total_us": None, "source": "my log"}
    )
    got = fit_transport(GDA, log, table)
    assert got.leaving_dispatch_us is base.leaving_dispatch_us and got.signal_ratio is base.signal_ratio
    assert got.beta_dispatch_us.scalar > base.beta_dispatch_us.scalar
    assert got.residual_us == pytest.approx((0.0, 0.0), abs=1e-6)
    assert got.beta_dispatch_us.tag is Tag.DERIVED and got.beta_dispatch_us.source == "fitted to my log"
    weak = fit_transport(GDA, log.copy(**{"trust": "assumed"}), table)
    assert weak.beta_dispatch_us.tag is Tag.ASSUMED


def test_a_transport_left_without_references_takes_its_class_median() -> None:
    """EFA host-proxy peers with costs 0.3 / 0.2, 0.5 / 0.4 and 0.9 / 0.8 (and a GPU-initiated
    one at 5 / 5, another class): efa-pplx takes the medians 0.5 / 0.4, assumed, with the fabric's
    prior and signal ratio. The NVLink transport leaves nothing: no latency, no signals."""
    fitted = {
        "efa-proxy": fit((1, 1), (0.3, 0.2)),
        "efa-uccl": fit((1, 1), (0.5, 0.4)),
        "efa-nvshmem": fit((1, 1), (0.9, 0.8)),
        "efa-gda": fit((1, 1), (5.0, 5.0)),
    }
    pplx = get_transport("efa-pplx")
    assert class_of(pplx) == ("efa", "host-proxy")
    got = fallback_transport(pplx, fitted, NVL, LEAVING)
    assert [got.beta_dispatch_us.scalar, got.beta_combine_us.scalar] == [0.5, 0.4]
    assert (
        got.beta_dispatch_us.tag is Tag.ASSUMED
        and "median of its class (efa, host-proxy)" in got.beta_dispatch_us.source
    )
    assert (
        got.leaving_dispatch_us is LEAVING["efa"].dispatch_us
        and got.signal_ratio is LEAVING["efa"].signal_ratio
    )
    assert got.reference_lanes == 2.0
    nvl = fallback_transport(NVLINK, fitted, NVL, LEAVING)
    assert (nvl.leaving_dispatch_us.scalar, nvl.leaving_combine_us.scalar, nvl.signal_ratio.scalar) == (
        0.0,
        0.0,
        0.0,
    )


def test_without_class_peers_any_fit_and_without_any_a_fifth_of_a_microsecond() -> None:
    """No EFA GPU-initiated peer: the median of every other fit (efa-proxy's 0.3 alone); nothing
    fitted at all: 0.2 us per message."""
    cqpoll = get_transport("efa-native-cqpoll")
    only = fallback_transport(cqpoll, {"efa-proxy": fit((1, 1), (0.3, 0.2))}, NVL, LEAVING)
    assert only.beta_dispatch_us.scalar == 0.3
    assert fallback_transport(cqpoll, {}, NVL, LEAVING).beta_combine_us.scalar == 0.2


# 3. Instance factors ---------------------------------------------------------------------------


def harness_row(instance: str, total: float, harness: str = "H1", **ref: Any) -> KernelRow:
    return row(GDA, **{"instance": instance, "total_us": total, "harness": harness, **ref})


def test_instance_factors_are_the_geometric_mean_of_same_harness_ratios() -> None:
    """Fixed pair 10 us. Harness H1: p5 190 vs p5en 100 us → (190 − 10) / (100 − 10) = 2; H2:
    p5 730 vs 100 → 8. p5's factor √(2 × 8) = 4. p5en is 1 by definition, InfiniBand nodes 1
    (fitted on their own nodes); p6-b200, in no pair, has none."""
    rows = [
        harness_row("p5en", 100.0),
        harness_row("p5", 190.0),
        harness_row("p5en", 100.0, "H2"),
        harness_row("p5", 730.0, "H2"),
    ]
    factors = fit_instance_factors(rows, lambda t: 10.0)
    assert factors["p5"].scalar == pytest.approx(4.0, rel=1e-13)
    assert factors["p5"].tag is Tag.DERIVED and "efa-gda H1: 190 vs 100 us" in factors["p5"].source
    assert factors["p5en"].scalar == 1.0
    assert {k: v.scalar for k, v in factors.items() if k.startswith("ib-")} == {
        "ib-h800": 1.0,
        "ib-h100": 1.0,
        "ib-h200": 1.0,
    }
    assert "p6-b200" not in factors


def test_rows_that_do_not_make_a_pair_are_left_out() -> None:
    """Another token count than the home row's, no home row in the harness, a dispatch-only
    row, a row out of scope, a one-node row, a row without a harness: none is a pair."""
    rows = [
        harness_row("p5en", 100.0),
        harness_row("p5", 190.0, tokens=64),
        harness_row("p6-b200", 190.0, "H3"),
        harness_row("p5", 190.0, dispatch_us=190.0, total_us=None),
        harness_row("p5", 190.0, in_scope=False),
        harness_row("p5", 190.0, ep=8),
        harness_row("p5", 190.0, harness=""),
    ]
    factors = fit_instance_factors(rows, lambda t: 10.0)
    assert "p5" not in factors and "p6-b200" not in factors


def test_a_time_below_the_fixed_pair_counts_as_one_microsecond() -> None:
    """Fixed pair 120 us above both totals: (max(190 − 120, 1)) / max(100 − 120, 1) = 70."""
    factors = fit_instance_factors([harness_row("p5en", 100.0), harness_row("p5", 190.0)], lambda t: 120.0)
    assert factors["p5"].scalar == pytest.approx(70.0, rel=1e-13)
    assert math.isfinite(factors["p5"].scalar)


@pytest.mark.parametrize("name", ["efa-proxy", "efa-gda", "efa-nvshmem", "efa-uccl", "ib-ibgda"])
def test_pooled_beta_minimises_the_log_error(name: str) -> None:
    """The fitted beta is the least-squares point: moving either direction 3 % raises the loss."""
    rows = kernel_rows()
    table = fit_kernels(rows)
    t = load_transports()[name]
    fit = table.transports[name]

    def loss(b_d: float, b_c: float) -> float:
        trial = replace(
            table,
            transports={
                **table.transports,
                name: replace(
                    fit,
                    beta_dispatch_us=fit.beta_dispatch_us * (b_d / fit.beta_dispatch_us.scalar),
                    beta_combine_us=fit.beta_combine_us * (b_c / fit.beta_combine_us.scalar),
                ),
            },
        )
        return kernel_log_loss(fit_rows(t, rows), trial)

    b_d, b_c = fit.beta_dispatch_us.scalar, fit.beta_combine_us.scalar
    best = loss(b_d, b_c)
    for f_d, f_c in ((1.03, 1.0), (1 / 1.03, 1.0), (1.0, 1.03), (1.0, 1 / 1.03)):
        assert loss(b_d * f_d, b_c * f_c) >= best - 1e-12, (name, f_d, f_c)


def test_leaving_the_designated_reference_out_refits_from_the_others() -> None:
    """The defect: leaving a transport's `role = "fit"` row out used to hand it the median of
    its class (efa-gda 332 -> 819 us, +147 %), although its other references were still there."""
    rows = kernel_rows()
    primary = next(r for r in rows if r.transport.name == "efa-gda" and r.ref.role == "fit")
    rest = [r for r in rows if r.key != primary.key]
    fit = fit_kernels(rest).transports["efa-gda"]
    assert fit.beta_dispatch_us.source.startswith("least squares on the log error of 9 references")
    held = kernel_prediction(primary, fit_kernels(rest))["total"]
    assert abs(held / primary.ref.total - 1.0) < 0.35
    alone = fit_kernels([r for r in rest if r.transport.name != "efa-gda"]).transports["efa-gda"]
    assert alone.beta_dispatch_us.source.startswith("no reference of efa-gda")  # unmeasured: class


def _log_loss(name: str, table: object, assumptions: Assumptions) -> float:
    from deepep_calc.fit.kernels import fit_rows, kernel_rows

    return kernel_log_loss(fit_rows(get_transport(name, assumptions), kernel_rows(assumptions)), table)


def test_kernel_fit_reruns_under_a_changed_transport_figure() -> None:
    """The per-selection cost is refitted against the changed wire: under it the refit
    reproduces the transport's references better than the built-in constants would."""
    before = built_in_table().transports["efa-gda"]
    low = CATALOG.with_values({"transport:efa-gda:wire_efficiency": 0.3})
    assert get_transport("efa-gda", low).wire_efficiency == 0.3
    table = built_in_table(low)
    assert table.transports["efa-gda"].beta_combine_us.scalar != pytest.approx(before.beta_combine_us.scalar)
    stale = replace(table, transports={**table.transports, "efa-gda": before})
    assert _log_loss("efa-gda", table, low) < _log_loss("efa-gda", stale, low)
    assert get_transport("efa-gda").wire_efficiency != 0.3  # the catalog's row is untouched


def test_a_single_kernel_reference_stays_exact_under_a_changed_figure() -> None:
    """A transport with one reference is refitted to it exactly, whatever its changed figure."""
    t = get_transport("efa-native-cqpoll")
    ref = t.reference
    inst = get_instance(ref.instance)
    shape = KernelShape(ref.tokens, ref.hidden, ref.topk, ref.experts)
    half = CATALOG.with_values({"transport:efa-native-cqpoll:wire_efficiency": 0.5})
    table = built_in_table(half)
    k = kernel_us(
        KernelSite(
            get_transport("efa-native-cqpoll", half), inst, inst.gpus_per_node, ref.ep, ref.comms, ref.qps
        ),
        shape,
        table.kernel_constants("efa-native-cqpoll", inst.name),
    )
    assert k["dispatch"].scalar == pytest.approx(ref.dispatch_us)
    assert k["combine"].scalar == pytest.approx(ref.combine_us)
