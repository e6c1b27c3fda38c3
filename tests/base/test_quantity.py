"""The provenance algebra: tags can only weaken, units are checked, arrays flow through."""

import math

import numpy as np
import pytest

from deepep_calc.base.quantity import Q, Tag, qmap, qmax, qmin, weakest


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


# Provenance of every operator, forward and reversed, scalar and array ---------------------------

M = Tag.MEASURED
D = Tag.DERIVED
A = Tag.ASSUMED


def _q(tag: Tag, value: object = 4.0, unit: str = "ms", source: str = "src") -> Q:
    return Q(value, unit, tag, source)


# (name, op, expected value for left 5 and right 2)
BINARY = [
    ("add", lambda a, b: a + b, 7.0),
    ("sub", lambda a, b: a - b, 3.0),
    ("mul", lambda a, b: a * b, 10.0),
    ("div", lambda a, b: a / b, 2.5),
]
# tag of (left op right) for every pair: measured op measured is derived, an assumption wins
PAIRS = [(M, M, D), (M, D, D), (D, M, D), (D, D, D), (M, A, A), (A, M, A), (D, A, A), (A, D, A), (A, A, A)]


@pytest.mark.parametrize("name,op,expected", BINARY)
@pytest.mark.parametrize("left,right,tag", PAIRS)
@pytest.mark.parametrize("array", [False, True])
def test_quantity_op_quantity(
    name: str, op: object, expected: float, left: Tag, right: Tag, tag: Tag, array: bool
) -> None:
    a = _q(left, np.array([5.0, 5.0]) if array else 5.0, source="left")
    b = _q(right, np.array([2.0, 2.0]) if array else 2.0, source="right")
    out = op(a, b)
    assert out.tag is tag, name
    assert np.all(np.asarray(out.value) == expected)
    assert out.source == "left; right"
    assert out.low is None and out.high is None


@pytest.mark.parametrize("left,tag", [(M, D), (D, D), (A, A)])
@pytest.mark.parametrize("array", [False, True])
def test_quantity_op_plain_number_both_ways(left: Tag, tag: Tag, array: bool) -> None:
    """A plain number adds no data: measured becomes derived (it is computed), assumed stays.
    Reversed operators compute the right way round: 10 − 4 = 6, 10 / 4 = 2.5, 2 / 4 = 0.5."""
    value = np.array([4.0, 4.0]) if array else 4.0
    q = _q(left, value)
    cases = [
        (q + 10, 14.0, "ms"),
        (10 + q, 14.0, "ms"),
        (q - 10, -6.0, "ms"),
        (10 - q, 6.0, "ms"),
        (q * 10, 40.0, "ms"),
        (10 * q, 40.0, "ms"),
        (q / 10, 0.4, "ms"),
        (10 / q, 2.5, "1/ms"),
        (2 / q, 0.5, "1/ms"),
    ]
    for out, expected, unit in cases:
        assert out.tag is tag, (left, expected)
        assert np.allclose(np.asarray(out.value), expected)
        assert out.unit == unit
        assert out.source == "src"


def test_reversed_division_and_subtraction_never_keep_measured() -> None:
    """The gap the old suite let through: `number / Q` keeping `measured` would print a modelled
    50.97 ms step as measured. 1000 / 19.62 tok/s = 50.968 ms/token: derived."""
    pu = Q.measured(19.62, "tok/s", "cell")
    step = 1000.0 / pu
    assert step.tag is Tag.DERIVED and step.value == pytest.approx(50.968, abs=1e-3)
    assert (1.0 - Q.measured(0.25, "", "x")).tag is Tag.DERIVED
    assert (1.0 - Q.measured(0.25, "", "x")).value == 0.75
    assert (np.float64(2.0) / Q.measured(4.0, "s", "x")).tag is Tag.DERIVED


def test_negation_keeps_the_observation() -> None:
    q = Q.measured(3.0, "ms", "run").with_band(2.0, 4.0)
    neg = -q
    assert (neg.value, neg.unit, neg.tag, neg.source) == (-3.0, "ms", Tag.MEASURED, "run")
    assert (-Q.assumed(np.array([1.0, -2.0]), "x", "s")).value.tolist() == [-1.0, 2.0]


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a - b, qmax, qmin])
def test_mismatched_units_refuse_to_combine(op: object) -> None:
    with pytest.raises(ValueError, match=r"'ms'.*'us'"):
        op(Q.derived(1.0, "ms", "a"), Q.derived(1.0, "us", "b"))
    with pytest.raises(ValueError, match=r"'us'.*'ms'"):
        op(Q.derived(1.0, "us", "a"), Q.derived(1.0, "ms", "b"))


def test_units_of_products_and_quotients() -> None:
    """Products join units with a dot; quotients write a/b; a dimensionless side drops out."""
    gb, s, one = Q.derived(8.0, "GB", "a"), Q.derived(2.0, "s", "b"), Q.derived(2.0, "", "c")
    assert (gb * s).unit == "GB·s"
    assert (gb / s).unit == "GB/s" and (gb / s).value == 4.0
    assert (gb * one).unit == "GB" and (one * gb).unit == "GB"
    assert (gb / one).unit == "GB"
    assert (one / s).unit == "1/s"


def test_bands_are_dropped_by_arithmetic_and_kept_by_renaming() -> None:
    q = Q.derived(10.0, "ms", "model").with_band(8.0, 12.0)
    assert q.banded and (q.low, q.high) == (8.0, 12.0)
    for out in (q + 1, 1 + q, q - 1, 1 - q, q * 2, 2 * q, q / 2, 2 / q, q + q, q * q, q / q):
        assert not out.banded and out.low is None and out.high is None
    renamed = q.as_("s", "restated")
    assert renamed.banded and (renamed.low, renamed.high) == (8.0, 12.0)
    assert (renamed.unit, renamed.source, renamed.tag, renamed.value) == ("s", "restated", Tag.DERIVED, 10.0)
    assert q.as_("ms") is q  # nothing renamed: the same object
    kept = q.as_("ms", "other source")
    assert kept is not q and kept.source == "other source" and kept.banded
    assert q.as_("us").source == "model" and q.as_("us").unit == "us"
    assert q.as_("GB").unit == "GB"  # a unit sorting before "ms" is renamed too
    assert not Q.derived(1.0, "x", "s").with_band(None, 2.0).banded


def test_weaken_only_lowers_a_tag_and_drops_the_band() -> None:
    m = Q.measured(1.0, "ms", "run").with_band(0.5, 2.0)
    assert m.weaken(Tag.ASSUMED).tag is Tag.ASSUMED
    assert m.weaken(Tag.DERIVED).tag is Tag.DERIVED
    assert Q.derived(1.0, "ms", "x").weaken(Tag.MEASURED).tag is Tag.DERIVED
    assert not m.weaken(Tag.DERIVED).banded


def test_qmax_qmin_elementwise_with_provenance() -> None:
    a = Q.measured(np.array([1.0, 5.0]), "us", "a")
    b = Q.derived(np.array([3.0, 2.0]), "us", "b")
    assert qmax(a, b).value.tolist() == [3.0, 5.0] and qmin(a, b).value.tolist() == [1.0, 2.0]
    assert qmax(a, b).tag is Tag.DERIVED and qmax(a, b).source == "a; b"
    assert qmax(Q.measured(1.0, "us", "a"), Q.measured(2.0, "us", "b")).tag is Tag.DERIVED
    assert qmin(a, Q.assumed(0.0, "us", "c")).tag is Tag.ASSUMED
    assert qmax(a, b).unit == "us"


def test_qmax_qmin_of_scalars_propagate_nan_from_either_side() -> None:
    """Like np.maximum / np.minimum: a NaN on either side gives NaN (the builtin max would keep
    the first argument), and plain scalars give the plain larger / smaller value."""
    nan, one = Q.derived(float("nan"), "us", "a"), Q.derived(1.0, "us", "b")
    for op in (qmax, qmin):
        assert math.isnan(op(one, nan).value) and math.isnan(op(nan, one).value)
    assert qmax(one, Q.derived(np.float64(3.0), "us", "c")).value == 3.0
    assert qmin(one, Q.derived(3.0, "us", "c")).value == 1.0


def test_qmap_applies_a_function_and_never_keeps_measured() -> None:
    m = Q.measured(np.array([1.0, 4.0]), "x", "run")
    out = qmap(np.sqrt, m)
    assert out.value.tolist() == [1.0, 2.0] and out.tag is Tag.DERIVED and out.unit == "x"
    assert out.source == "run"
    assert qmap(np.sqrt, m, "y").unit == "y"
    assert qmap(np.sqrt, Q.assumed(4.0, "x", "s")).tag is Tag.ASSUMED
    assert qmap(np.sqrt, Q.derived(4.0, "x", "s")).tag is Tag.DERIVED


def test_weakest_of_several() -> None:
    m, d, a = Q.measured(1, "x", "m"), Q.derived(1, "x", "d"), Q.assumed(1, "x", "a")
    assert weakest(m) is Tag.MEASURED
    assert weakest(m, d) is Tag.DERIVED
    assert weakest(m, d, a) is Tag.ASSUMED


def test_sources_merge_in_order_without_repeats_and_are_capped() -> None:
    a, b = Q.derived(1.0, "x", "a"), Q.derived(1.0, "x", "b")
    assert (a + b).source == "a; b"
    assert (a + a).source == "a"
    assert (a + b + a).source == "a; b"
    assert (Q.derived(1.0, "x", "") + b).source == "b"
    assert (a + Q.derived(1.0, "x", "")).source == "a"
    assert (Q.derived(1.0, "x", "zeta") + Q.derived(1.0, "x", "alpha")).source == "zeta; alpha"
    # an operand with no source leaves the other's exactly as it is
    assert (Q.derived(1.0, "x", "a; a") + Q.derived(1.0, "x", "")).source == "a; a"
    # 13 distinct sources in one merge: six shown, 13 - 6 = 7 more
    wide = Q.derived(1.0, "x", "; ".join(f"a{i}" for i in range(7))) + Q.derived(
        1.0, "x", "; ".join(f"b{i}" for i in range(6))
    )
    assert wide.source == "a0; a1; a2; a3; a4; a5; +7 more"
    total = Q.derived(0.0, "x", "s0")
    for i in range(1, 9):
        total = total + Q.derived(1.0, "x", f"s{i}")
    assert total.source == "s0; s1; s2; s3; s4; s5; +3 more"
    six = Q.derived(0.0, "x", "s0")
    for i in range(1, 6):
        six = six + Q.derived(1.0, "x", f"s{i}")
    assert six.source == "s0; s1; s2; s3; s4; s5"
    # two capped lists that share their first six: the omission is still said, at least 3
    other = Q.derived(0.0, "x", "s0; s1; s2; s3; s4; s5; +1 more")
    assert (total + other).source == "s0; s1; s2; s3; s4; s5; +3 more"
    assert (other + Q.derived(0.0, "x", "s0; s1; s2; s3; s4; s5; +2 more")).source.endswith("+2 more")


def test_to_json_plain_types_bands_and_non_finite() -> None:
    assert Q.derived(np.float64(2.5), "ms", "s").to_json()["value"] == 2.5
    assert type(Q.derived(np.float64(2.5), "ms", "s").to_json()["value"]) is float
    assert type(Q.derived(np.int64(3), "x", "s").to_json()["value"]) is int
    assert Q.derived(float("inf"), "ms", "s").to_json()["value"] is None
    assert Q.derived(np.float64("nan"), "ms", "s").to_json()["value"] is None
    plain = Q.assumed(1.0, "ms", "s").to_json()
    assert plain == {"value": 1.0, "unit": "ms", "tag": "assumed", "source": "s"}
    banded = Q.derived(10.0, "ms", "m").with_band(np.float64(8.0), float("inf")).to_json()
    assert banded == {"value": 10.0, "unit": "ms", "tag": "derived", "source": "m", "low": 8.0, "high": None}
    assert type(banded["low"]) is float
    arr = Q.derived(np.array([1.0, 2.0]), "ms", "m").with_band(np.array([0.5, 1.0]), np.array([2.0, 4.0]))
    j = arr.to_json()
    assert (j["value"], j["low"], j["high"]) == ([1.0, 2.0], [0.5, 1.0], [2.0, 4.0])
    assert "low" not in Q.derived(1.0, "ms", "m").with_band(1.0, None).to_json()
    assert Q.derived(1.0, "x", "m").with_band(7, 9).to_json()["low"] == 7


def test_scalar_fmt_repr_and_tag_names() -> None:
    assert Q.derived(np.array([[3.0, 4.0]]), "ms", "s").scalar == 3.0
    assert Q.derived(np.float64(2.0), "ms", "s").scalar == 2.0
    assert Q.derived(1234.5678, "ms", "s").fmt() == "1,234.6 ms"
    assert Q.derived(1234.5678, "ms", "s").fmt(2) == "1,234.57 ms"
    assert repr(Q.measured(1.5, "ms", "run")) == "Q(1.5 ms, measured, 'run')"
    assert [str(t) for t in (Tag.ASSUMED, Tag.DERIVED, Tag.MEASURED)] == ["assumed", "derived", "measured"]
    assert Tag.parse(" derived ".strip()) is Tag.DERIVED and Tag.parse("ASSUMED") is Tag.ASSUMED
    with pytest.raises(ValueError, match="measured, derived or assumed"):
        Tag.parse("")


def _same(a: Q, b: Q) -> bool:
    return np.array_equal(np.asarray(a.value), np.asarray(b.value)) and (
        a.unit,
        a.tag,
        a.source,
        a.low,
        a.high,
    ) == (b.unit, b.tag, b.source, b.low, b.high)


@pytest.mark.parametrize("top", list(Tag))
@pytest.mark.parametrize("bottom", list(Tag))
@pytest.mark.parametrize("array", [False, True])
def test_quotient_and_over_are_the_long_forms_in_one_object(top: Tag, bottom: Tag, array: bool) -> None:
    """`a.quotient(b, s, u)` is `(a / b * s).as_(u)` and `a.over(d, u)` is `(a / d).as_(u)`:
    the same bits, tag and merged source, whatever the tags and with a plain divisor too."""
    value = np.array([3.0, 7.0, 0.1]) if array else 7.0
    mb = Q(value, "MB", top, "routed bytes; a")
    rate = Q(33.0, "GB/s", bottom, "measured curve; b")
    assert _same(mb.quotient(rate, 1e3, "us"), (mb / rate * 1e3).as_("us"))
    assert _same(mb.quotient(rate, 1e3, "us", "why"), (mb / rate * 1e3).as_("us", "why"))
    assert _same(mb.quotient(2.5, 1e6, "us"), (mb / 2.5 * 1e6).as_("us"))
    assert _same(mb.quotient(2.5, 1e6, "us", "why"), (mb / 2.5 * 1e6).as_("us", "why"))
    assert _same(mb.over(1000.0, "GB"), (mb / 1000.0).as_("GB"))
