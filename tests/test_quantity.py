"""The provenance algebra: tags can only weaken, units are checked, arrays flow through."""

import numpy as np
import pytest

from deepep_calc.quantity import Q, Tag, qmax, qmin


def test_measured_arithmetic_is_derived() -> None:
    a = Q.measured(19.62, "tok/s", "cell A")
    b = Q.measured(27.57, "tok/s", "cell B")
    tax = (1000.0 / a - 1000.0 / b).as_("ms")
    assert tax.tag is Tag.DERIVED
    assert tax.scalar == pytest.approx(1000 / 19.62 - 1000 / 27.57)
    assert "cell A" in tax.source and "cell B" in tax.source


def test_any_assumption_weakens_the_result() -> None:
    m = Q.measured(2.0, "ms", "run")
    a = Q.assumed(3.0, "ms", "spec sheet")
    d = Q.derived(4.0, "ms", "arith")
    assert (m + a).tag is Tag.ASSUMED
    assert (d * a).tag is Tag.ASSUMED
    assert (m + d).tag is Tag.DERIVED
    assert qmax(m, a).tag is Tag.ASSUMED and qmin(m, d).tag is Tag.DERIVED


def test_units_must_match_for_sums() -> None:
    with pytest.raises(ValueError, match="cannot"):
        Q.measured(1.0, "ms", "x") + Q.measured(1.0, "us", "y")
    assert (Q.derived(2.0, "GB", "x") / Q.derived(4.0, "GB/s", "y")).unit == "GB/GB/s"


def test_arrays_and_json() -> None:
    q = Q.assumed(np.array([1.0, 2.0]), "ms", "s") * 2.0
    assert q.to_json()["value"] == [2.0, 4.0]
    assert Q.derived(float("nan"), "x", "s").to_json()["value"] is None
    assert Q.measured(1.5, "ms", "src").to_json() == {
        "value": 1.5,
        "unit": "ms",
        "tag": "measured",
        "source": "src",
    }


def test_tag_parse_rejects_unknown() -> None:
    assert Tag.parse("Measured") is Tag.MEASURED
    with pytest.raises(ValueError):
        Tag.parse("guessed")
