"""The calibration profile's records (`fit/profile_records.py`): what each refuses, and what the
estimate asks of a profile (its cells, its engine constants in the table, a refitted transport,
a kernel log's own medians). The documents are `profiles.document()` and `kernel_record()`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from deepep_calc import Scenario
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.fit.build import built_in_table
from deepep_calc.fit.profile import parse_profile, validate_document
from deepep_calc.fit.profile_records import ConstantsRecord, InputRecord, KernelRecord, Profile, QRecord
from deepep_calc.physics.deepep import KernelShape
from deepep_calc.question.scenario import resolve
from one_line import assert_one_line

from .profiles import BASE, document, kernel_record, text

DSV3_128 = KernelShape(128, 7168, 8, 256)


def named(**changes: Any) -> Profile:
    """The document of `changes`, read as the file `my.toml`."""
    return parse_profile("my.toml", text(document(**changes)), "my.toml")


def test_a_q_record_round_trips_a_quantity() -> None:
    q = Q.assumed(12.5, "us", "built-in value kept")
    r = QRecord.of(q)
    assert (r.value, r.unit, r.tag, r.source) == (12.5, "us", "assumed", "built-in value kept")
    back = r.q("profile my.toml")
    assert (back.scalar, back.unit, back.tag) == (12.5, "us", Tag.ASSUMED)
    assert back.source == "profile my.toml: built-in value kept"
    assert r.q().source == "built-in value kept"


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("launch_us", {"unit": "ms"}, "launch_us is in 'ms'; expected 'us'"),
        ("proxy_lane_us", {"value": -1.0}, "proxy_lane_us is -1; expected at least 0"),
        ("ttft_steps", {"unit": "us"}, "ttft_steps is in 'us'; expected 'steps'"),
    ],
)
def test_an_engine_constant_must_carry_its_unit_and_no_sign(
    name: str, change: dict[str, Any], message: str
) -> None:
    """A hand-edited unit would crash deep in the step model, a negative latency give negative
    throughput: both are refused where the record is read."""
    constants = {k: dict(v) for k, v in BASE["constants"].items()}
    constants[name].update(change)
    with pytest.raises(ValidationError, match=message):
        ConstantsRecord.model_validate(constants)


def test_a_kernel_record_refuses_negative_times_and_empty_shapes() -> None:
    with pytest.raises(ValidationError, match=re.escape("combine_beta_us is -0.25; expected at least 0")):
        KernelRecord.model_validate(
            kernel_record(combine_beta_us={**kernel_record()["combine_beta_us"], "value": -0.25})
        )
    with pytest.raises(ValidationError, match="dispatch_p50_us is in 'ms'; expected 'us'"):
        KernelRecord.model_validate(
            kernel_record(dispatch_p50_us={**kernel_record()["dispatch_p50_us"], "unit": "ms"})
        )
    with pytest.raises(ValidationError, match="ep"):
        KernelRecord.model_validate(kernel_record(ep=0))


def test_an_input_record_holds_a_sha256() -> None:
    good = {"role": "kernel-log", "path": "k.log", "sha256": "a" * 64, "size_bytes": 0}
    assert InputRecord.model_validate(good).role == "kernel-log"
    for bad in ({"sha256": "A" * 64}, {"sha256": "a" * 63}, {"size_bytes": -1}, {"role": "other"}):
        with pytest.raises(ValidationError):
            InputRecord.model_validate({**good, **bad})


def test_at_most_one_kernel_refit() -> None:
    with pytest.raises(Exception, match="kernel: List should have at most 1 item"):
        validate_document(document(kernel=[kernel_record(), kernel_record()]), "my.toml")


def test_a_profile_is_labelled_by_its_file() -> None:
    assert validate_document(document(), "my.toml").label == "calibration profile"  # not read from a file
    assert named().label == "profile my.toml"


def test_its_cells_name_the_profile() -> None:
    p = named()
    (cell,) = p.cells()
    assert cell.source.startswith("profile my.toml: [G-MD]")
    assert cell.id == "trt-ab-k8-c4" and not p.measured[0].source.startswith("profile")


def test_its_engine_constants_name_the_profile() -> None:
    e = named().engine_constants()
    assert [e.launch_us.scalar, e.step_us.scalar, e.proxy_fixed_us.scalar, e.proxy_lane_us.scalar] == [
        50.0,
        1000.0,
        100.0,
        400.0,
    ]
    assert (e.ttft_steps.scalar, e.ttft_steps.unit) == (2.0, "steps")
    assert e.launch_us.tag is Tag.DERIVED and e.launch_us.source == "profile my.toml: fitted to your runs"


def test_apply_puts_the_profiles_engine_and_transport_in_the_table() -> None:
    """TRT-LLM eager takes the profile's constants, graph mode and other engines keep the
    built-in ones; the refitted efa-proxy replaces the built-in fit."""
    table = built_in_table()
    p = named(kernel=[kernel_record()])
    applied = p.apply(table, resolve(Scenario()))
    assert applied.engine("trtllm", False).launch_us.scalar == 50.0
    assert applied.engine("trtllm", True) is table.engine("trtllm", True)
    assert applied.engine("vllm", False) is table.engine("vllm", False)
    k = applied.transports["efa-proxy"]
    assert [k.leaving_dispatch_us.scalar, k.beta_dispatch_us.scalar, k.signal_ratio.scalar] == [
        20.0,
        0.5,
        0.5,
    ]
    assert k.reference_lanes == 4.0 and k.beta_dispatch_us.source == "profile my.toml: kernel log"
    assert applied.transports["efa-gda"] is table.transports["efa-gda"]
    assert built_in_table().engine("trtllm", False).launch_us.scalar != 50.0  # the built-in is untouched


def test_a_profile_fitted_on_another_engine_is_refused() -> None:
    with pytest.raises(InputError) as err:
        named().apply(built_in_table(), resolve(Scenario(engine="vllm")))
    assert_one_line(err.value, "--calibration: ", "my.toml", "--engine trtllm", "not vllm")


def test_the_refitted_transport_or_none() -> None:
    p = named(kernel=[kernel_record()])
    fit = p.kernel_fit("efa-proxy")
    assert fit is not None and fit.beta_combine_us.scalar == 0.25
    assert p.kernel_fit("efa-gda") is None and named().kernel_fit("efa-proxy") is None


def test_the_logs_own_medians_answer_exactly_the_logged_query() -> None:
    """efa-proxy on p5en, EP16, 8 comms, 2 QPs, 128 tokens of DeepSeek's shape in FP8: 300 and
    500 us measured, 800 in all (derived: a sum of measurements). Any other query, a BF16
    dispatch, or a log without medians: none (the model answers)."""
    p = named(kernel=[kernel_record()])
    got = p.kernel_measured("efa-proxy", "p5en", 16, DSV3_128, 8, 2)
    assert got is not None
    assert [got[k].scalar for k in ("dispatch_us", "combine_us", "total_us")] == [300.0, 500.0, 800.0]
    assert got["dispatch_us"].tag is Tag.MEASURED and got["total_us"].tag is Tag.DERIVED
    assert got["dispatch_us"].source == "profile my.toml: kernel log"
    others = [
        ("efa-gda", "p5en", 16, DSV3_128, 8, 2),
        ("efa-proxy", "p5", 16, DSV3_128, 8, 2),
        ("efa-proxy", "p5en", 32, DSV3_128, 8, 2),
        ("efa-proxy", "p5en", 16, KernelShape(64, 7168, 8, 256), 8, 2),
        ("efa-proxy", "p5en", 16, KernelShape(128, 7168, 8, 256, "bf16"), 8, 2),
        ("efa-proxy", "p5en", 16, DSV3_128, 4, 2),
        ("efa-proxy", "p5en", 16, DSV3_128, 8, 6),
    ]
    assert [p.kernel_measured(*query) for query in others] == [None] * len(others)
    no_medians = named(kernel=[kernel_record(dispatch_p50_us=None, combine_p50_us=None)])
    assert no_medians.kernel_measured("efa-proxy", "p5en", 16, DSV3_128, 8, 2) is None
