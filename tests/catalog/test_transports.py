"""`catalog/transports.py`: DeepEP transports (`data/transports.toml`), the kernel references
that pin each, `--transport` with the figures a what-if changes, the route DeepEP's exchange
rides (the configured transport across nodes, NVLink inside one), every transport's library
either mapped to an engine backend (`data/engines.toml`) or one no engine loads, and the
references of a removed code path (pure RDMA) out of scope."""

from __future__ import annotations

from typing import Any

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.records import RecordError
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.transports import (
    KernelRef,
    Transport,
    deepep_route,
    get_transport,
    kernel_route,
    load_transports,
)
from one_line import assert_one_line

TRANSPORTS = load_transports()


def ref(**update: Any) -> KernelRef:
    return KernelRef(
        **{"instance": "p5en", "ep": 16, "dispatch_us": 100.0, "combine_us": 150.0, "source": "s", **update}
    )


# ---------------------------------------------------------------- kernel references


def test_total_is_the_stated_total_or_dispatch_plus_combine() -> None:
    assert ref().total == 250.0
    assert ref(total_us=300.0).total == 300.0  # a stated total wins
    assert ref(dispatch_us=None, combine_us=None, total_us=40.0).total == 40.0
    assert ref(combine_us=None).dispatch_only and not ref().dispatch_only
    assert not ref(combine_us=None, total_us=90.0).dispatch_only


def test_a_reference_needs_its_figures() -> None:
    with pytest.raises(ValueError, match="needs dispatch_us"):
        ref(dispatch_us=None, combine_us=None)
    with pytest.raises(ValueError, match="a fit reference needs both"):
        ref(combine_us=None, role="fit")
    assert ref(combine_us=None).role == "cross-check"  # a cross-check may give dispatch alone


def test_label_and_describe_name_the_kernel_point() -> None:
    assert ref().label == "p5en EP16, 128 tok/rank"
    assert ref(setting="4 SMs").label == "p5en EP16, 128 tok/rank, 4 SMs"
    assert ref().describe("efa-gda") == "efa-gda @ p5en EP16 128 tok"  # DeepSeek-V3's shape: not repeated
    other = ref(
        hidden=4096, topk=4, experts=64, tokens=32, prefill=True, dispatch_dtype="bf16", setting="p50"
    )
    assert (
        other.describe("efa-gda") == "efa-gda @ p5en EP16 32 tok h4096 top-4 E64 prefill bf16 dispatch (p50)"
    )


def test_same_point_compares_the_shape_not_the_figures_or_setting() -> None:
    a = ref()
    assert a.same_point(ref(dispatch_us=1.0, combine_us=2.0, setting="other run", comms=4, qps=2))
    for update in (
        {"instance": "p5"},
        {"ep": 32},
        {"tokens": 64},
        {"hidden": 4096},
        {"topk": 4},
        {"experts": 128},
        {"dispatch_dtype": "bf16"},
        {"prefill": True},
    ):
        assert not a.same_point(ref(**update)), update


# ---------------------------------------------------------------- transports


def test_exactly_one_bandwidth_model_per_transport() -> None:
    raw = TRANSPORTS["efa-gda"].as_dict()
    assert raw["wire_efficiency"] is not None and raw["bw_k1_gb_s"] is None
    with pytest.raises(RecordError, match="give exactly one of wire_efficiency or bw_k1_gb_s"):
        Transport.validate({**raw, "bw_k1_gb_s": 8.0})
    with pytest.raises(RecordError, match="give exactly one"):
        Transport.validate({**raw, "wire_efficiency": None})
    with pytest.raises(RecordError) as info:
        Transport.validate({**raw, "wire_efficiency": 1.5})
    assert info.value.loc == "wire_efficiency"


def test_the_proxy_that_counts_comms_is_the_comms_sensitive_one() -> None:
    """Only a transport fitted by a bandwidth at one comm (NCCL-GIN's proxy) moves with
    EP_NUM_COMMS; whether a transport is host-proxied is its initiation."""
    assert {n for n, t in TRANSPORTS.items() if t.comms_sensitive} == {"efa-proxy"}
    for name, t in TRANSPORTS.items():
        assert t.host_proxied == (t.initiation == "host-proxy"), name


def test_references_list_the_primary_then_the_fit_shapes_then_the_cross_checks() -> None:
    t = TRANSPORTS["nvlink"]
    assert t.references() == [t.reference, *t.fit, *t.cross_check]
    assert len(t.references()) == 1 + len(t.fit) + len(t.cross_check)


def test_catalog_rows_run_on_catalog_instances_and_are_known_by_a_fit_reference() -> None:
    instances = set(load_instances())
    for name, t in TRANSPORTS.items():
        assert set(t.instances) <= instances and t.instances, name
        assert t.reference.role == "fit" and t.reference.instance in t.instances, name
        if t.fabric == "nvlink":
            assert set(t.instances) == instances, name  # every node has NVLink inside
        assert all(r.instance in instances for r in t.references()), name


# ---------------------------------------------------------------- --transport


@pytest.mark.parametrize("text", ["efa-gda", " EFA-GDA "])
def test_get_transport_ignores_case_and_spaces(text: str) -> None:
    assert get_transport(text) is TRANSPORTS["efa-gda"]


def test_an_unknown_transport_lists_the_transports() -> None:
    with pytest.raises(InputError) as info:
        get_transport("rdma")
    assert (
        assert_one_line(info.value)
        == f"--transport: 'rdma' is not allowed; expected one of {', '.join(TRANSPORTS)}"
    )


def test_a_what_if_changes_only_its_transport_s_figures() -> None:
    moved = CATALOG.with_values({"transport:efa-gda:wire_efficiency": 0.5})
    t = get_transport("efa-gda", moved)
    assert t.wire_efficiency == 0.5 and TRANSPORTS["efa-gda"].wire_efficiency == 0.95
    assert t.as_dict(exclude={"wire_efficiency"}) == TRANSPORTS["efa-gda"].as_dict(
        exclude={"wire_efficiency"}
    )
    assert get_transport("efa-proxy", moved) is TRANSPORTS["efa-proxy"]


# ---------------------------------------------------------------- the route


@pytest.mark.parametrize(
    ("ep", "gpus_per_node", "route"),
    [
        (8, 8, "NVLink"),  # one node
        (4, 8, "NVLink"),
        (9, 8, "efa-gda"),  # 9 GPUs span 2 nodes of 8
        (16, 8, "efa-gda"),
        (8, 4, "efa-gda"),
    ],
)
def test_a_kernel_s_route_is_set_by_the_nodes_its_ep_group_spans(
    ep: int, gpus_per_node: int, route: str
) -> None:
    assert kernel_route("efa-gda", ep, gpus_per_node) == route


def test_deepep_route_names_nvlink_on_one_node() -> None:
    assert deepep_route("efa-proxy", 1) == "NVLink"
    assert deepep_route("efa-proxy", 2) == "efa-proxy"


def test_every_transport_library_is_loaded_or_explained() -> None:
    """A library added to transports.toml without an engine mapping is caught here."""
    from deepep_calc.catalog.engines import load_engines
    from deepep_calc.catalog.transports import load_transports

    libraries = {t.library for t in load_transports().values()}
    for name in ("vllm", "sglang"):
        mapped = set(load_engines()[name].deepep_backend)
        assert mapped <= libraries
        assert libraries - mapped == {"pplx-garden", "research"}


def test_pure_rdma_runs_are_out_of_scope() -> None:
    """An IB campaign whose single-node (EP8) figure is over 2x the NVLink-forwarding EP8 figure
    ran the removed pure-RDMA path: its rows are out of scope, like the README's pure-RDMA rows."""
    t = load_transports()["ib-ibgda"]
    nvlink_ep8 = next(r.total for r in t.references() if r.ep == 8 and r.in_scope and r.trust == "measured")
    by_source: dict[str, list] = {}
    for r in t.references():
        by_source.setdefault(r.source.split(",")[0].removesuffix(" EP8"), []).append(r)
    for refs in by_source.values():
        if any(r.ep == 8 and r.total > 2 * nvlink_ep8 for r in refs):
            assert not any(r.in_scope for r in refs), refs[0].source
