"""The built-in table as a shipped file (`fit/shipped.py`): what `to_toml` writes, `from_toml`
reads back, and a file of another fit version is refused rather than misread."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.fit.build import built_in_table
from deepep_calc.fit.shipped import FIT_VERSION, from_toml, shipped_text, to_toml
from deepep_calc.fit.table import NvlinkFit, Table, TransportFit
from deepep_calc.physics.step import EngineConstants, ExchangeTerm


def q(value: float, unit: str = "us", tag: Tag = Tag.DERIVED) -> Q:
    return Q(value, unit, tag, f"hand {value}")


def hand_table() -> Table:
    """One of everything a table holds, with values that round-trip only at full precision."""
    eng = EngineConstants(q(10.0 / 3.0), q(1000.0), q(0.0, tag=Tag.ASSUMED), q(400.0), q(2.0, "steps"))
    return Table(
        nvlink={"deepep-v2": NvlinkFit(q(30.1), q(0.55, ""))},
        transports={
            "efa-proxy": TransportFit(q(20.0), q(10.0), q(0.5), q(0.25), 5.656854249492381, q(0.5, ""))
        },
        instance_factors={"p5": q(1.513298181246753, "")},
        kernel_floor_us=q(2.0),
        expert_efficiency=q(0.25, ""),
        engines={("vllm", True): eng},
        exchange_terms={("vllm", "allgather"): ExchangeTerm(q(3.0), q(0.01))},
        leaving={"efa": (q(20.0), q(10.0), q(0.5, ""))},
        covered=frozenset({"b/deepep/x/y/eager", "a/allgather/nccl/y/graphs"}),
        bands={"step": (0.812345678, 1.25)},
    )


def test_the_file_layout() -> None:
    """The leaving latency is stored under the older `alpha_*` keys, an engine as
    `engine:mode`, an exchange term under `arm_term`, bands to four decimals, the covered keys
    sorted."""
    doc = tomllib.loads(to_toml(hand_table()))
    assert doc["fit_version"] == FIT_VERSION
    transport = doc["transport"]["efa-proxy"]
    assert transport["alpha_dispatch_us"]["value"] == 20.0 and transport["alpha_combine_us"]["value"] == 10.0
    assert transport["reference_lanes"] == 5.656854249492381
    assert doc["engine"]["vllm:graphs"]["proxy_fixed_us"] == {
        "value": 0.0,
        "unit": "us",
        "tag": "assumed",
        "source": "hand 0.0",
    }
    assert doc["arm_term"]["vllm:allgather"]["token_us"]["value"] == 0.01
    assert doc["band"]["step"] == {"low": 0.8123, "high": 1.25}
    assert doc["covered"] == ["a/allgather/nccl/y/graphs", "b/deepep/x/y/eager"]
    assert doc["leaving"]["efa"]["signal_ratio"]["value"] == 0.5


def test_a_table_reads_back_as_it_was_written() -> None:
    """Every constant's value (full precision), unit, tag and source, and the bands as written."""
    t = hand_table()
    back = from_toml(to_toml(t))
    assert back.engine("vllm", True).launch_us.scalar == 10.0 / 3.0
    assert back.engine("vllm", True).proxy_fixed_us.tag is Tag.ASSUMED
    assert back.engine("vllm", True).ttft_steps.unit == "steps"
    fit = back.transports["efa-proxy"]
    assert [fit.leaving_dispatch_us.scalar, fit.beta_combine_us.scalar, fit.signal_ratio.scalar] == [
        20.0,
        0.25,
        0.5,
    ]
    assert fit.reference_lanes == 5.656854249492381 and fit.beta_dispatch_us.source == "hand 0.5"
    assert back.instance_factor("p5").scalar == 1.513298181246753
    assert back.nvlink["deepep-v2"].alpha_us.scalar == 30.1
    assert back.exchange_terms[("vllm", "allgather")].fixed_us.scalar == 3.0
    assert back.leaving["efa"][1].scalar == 10.0
    assert back.covered == t.covered
    assert back.bands == {"step": (0.8123, 1.25)}
    assert to_toml(back) == to_toml(replace(t, bands=back.bands))  # nothing else lost


def test_the_shipped_file_is_exactly_what_to_toml_writes_of_it() -> None:
    """Read and written again, the packaged fitted.toml comes back byte for byte: the file holds
    nothing `from_toml` drops."""
    text = shipped_text()
    assert text is not None
    assert to_toml(from_toml(text)) == text


def test_the_built_in_table_is_the_shipped_file() -> None:
    text = shipped_text()
    assert text is not None
    shipped, built_in = from_toml(text), built_in_table()
    for name, fit in shipped.transports.items():
        assert fit.beta_dispatch_us.scalar == built_in.transports[name].beta_dispatch_us.scalar
    assert shipped.bands == built_in.bands and shipped.covered == built_in.covered


def test_a_file_of_another_fit_version_is_refused() -> None:
    text = to_toml(hand_table()).replace(f"fit_version = {FIT_VERSION}", "fit_version = 2")
    with pytest.raises(ValueError, match=f"fitted.toml is for fit_version 2, not {FIT_VERSION}"):
        from_toml(text)
    with pytest.raises(ValueError, match=f"fit_version None, not {FIT_VERSION}"):
        from_toml("[hardware]\n")
