"""The constants table (`fit/table.py`): what it hands the physics for one scenario, how it
stands in for what no fit measured, and which band a kind of figure takes.

A hand-made table (`TABLE`): DeepEP 2.x's NVLink constants only (alpha 30 us, efficiency
0.5); `efa-proxy` leaving the node in 20 / 10 us, 0.5 / 0.25 us per message at 4 lanes,
a signal at 0.5 puts; a factor of 1.5 for p5; TRT-LLM's eager and graph constants; an
allgather term for TRT-LLM and one for vLLM; bands for steps, covered and not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from deepep_calc import Scenario
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.fit.table import NvlinkFit, Table, TransportFit
from deepep_calc.physics.collectives import collective_constants
from deepep_calc.physics.step import EngineConstants, ExchangeTerm
from deepep_calc.question.scenario import resolve


def q(value: float, unit: str = "us") -> Q:
    return Q.derived(value, unit, f"hand {value}")


def engine(launch: float, step: float) -> EngineConstants:
    return EngineConstants(q(launch), q(step), q(100.0), q(400.0), q(2.0, "steps"))


PROXY_FIT = TransportFit(q(20.0), q(10.0), q(0.5), q(0.25), 4.0, q(0.5, ""))
TRT_TERM = ExchangeTerm(q(3.0), q(0.01))
VLLM_TERM = ExchangeTerm(q(7.0), q(0.02))
TABLE = Table(
    nvlink={"deepep-v2": NvlinkFit(q(30.0), q(0.5, ""))},
    transports={"efa-proxy": PROXY_FIT},
    instance_factors={"p5": q(1.5, "")},
    kernel_floor_us=q(2.0),
    expert_efficiency=q(0.25, ""),
    engines={("trtllm", False): engine(10.0, 1000.0), ("trtllm", True): engine(0.0, 500.0)},
    exchange_terms={("trtllm", "allgather"): TRT_TERM, ("vllm", "allgather"): VLLM_TERM},
    bands={"step": (0.8, 1.25), "step:uncovered": (0.5, 2.0), "ratio": (0.9, 1.1)},
)


def scalars(obj: Any, *names: str) -> list[float]:
    return [getattr(obj, n).scalar for n in names]


def test_an_instance_without_a_factor_takes_1_assumed() -> None:
    assert TABLE.instance_factor("p5").scalar == 1.5
    f = TABLE.instance_factor("p6-b300")
    assert (f.scalar, f.tag) == (1.0, Tag.ASSUMED)
    assert "no same-harness kernel pair for p6-b300" in f.source


def test_a_library_never_measured_on_one_node_takes_deepep_2s_nvlink_constants() -> None:
    assert TABLE.nvlink_fit("uccl-ep") is TABLE.nvlink["deepep-v2"]
    own = replace(TABLE, nvlink={**TABLE.nvlink, "uccl-ep": NvlinkFit(q(60.0), q(0.7, ""))})
    assert own.nvlink_fit("uccl-ep").alpha_us.scalar == 60.0


def test_kernel_constants_gather_the_transport_its_library_and_the_instance() -> None:
    """efa-proxy loads DeepEP 2.x: its NVLink alpha 30 and efficiency 0.5; on p5 the factor 1.5,
    on p5en (no factor) 1."""
    k = TABLE.kernel_constants("efa-proxy", "p5")
    assert scalars(k, "leaving_dispatch_us", "leaving_combine_us", "beta_dispatch_us", "beta_combine_us") == [
        20.0,
        10.0,
        0.5,
        0.25,
    ]
    assert k.reference_lanes == 4.0
    assert scalars(k, "instance_factor", "nvlink_alpha_us", "nvlink_efficiency", "signal_ratio") == [
        1.5,
        30.0,
        0.5,
        0.5,
    ]
    assert TABLE.kernel_constants("efa-proxy", "p5en").instance_factor.scalar == 1.0


def test_step_constants_take_the_engines_own_constants_and_terms() -> None:
    """The default scenario (TRT-LLM, efa-proxy, p5en): TRT-LLM's eager and graph constants, its
    allgather term and not vLLM's, and NCCL's measured figures for p5en."""
    r = resolve(Scenario())
    c = TABLE.step_constants(r)
    assert c.eager is TABLE.engine("trtllm", False) and c.graphs is TABLE.engine("trtllm", True)
    assert c.exchange_terms == {"allgather": TRT_TERM}
    assert (c.kernel_floor_us.scalar, c.expert_efficiency.scalar) == (2.0, 0.25)
    assert c.kernel.leaving_dispatch_us.scalar == 20.0 and c.kernel.instance_factor.scalar == 1.0
    assert c.collectives is collective_constants(r.instance, CATALOG)


def test_with_engine_and_with_transport_change_a_copy() -> None:
    """A profile's constants replace one engine and mode, or one transport, in a new table."""
    vllm = engine(40.0, 2000.0)
    t = TABLE.with_engine("vllm", False, vllm)
    assert t.engine("vllm", False) is vllm and t.engine("trtllm", False) is TABLE.engine("trtllm", False)
    assert ("vllm", False) not in TABLE.engines
    refit = replace(PROXY_FIT, beta_dispatch_us=q(0.9))
    u = TABLE.with_transport("efa-proxy", refit)
    assert u.kernel_constants("efa-proxy", "p5en").beta_dispatch_us.scalar == 0.9
    assert TABLE.transports["efa-proxy"] is PROXY_FIT


def test_an_uncovered_figure_takes_the_wider_band_where_there_is_one() -> None:
    assert TABLE.band("step") == (0.8, 1.25)
    assert TABLE.band("step", covered=False) == (0.5, 2.0)
    assert TABLE.band("ratio", covered=False) == (0.9, 1.1)  # no wider band known: the covered one
    assert TABLE.band("ttft") is None
