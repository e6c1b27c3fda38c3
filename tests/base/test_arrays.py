"""`base.arrays`: the builtin-on-scalars helpers give NumPy's values, bit for bit (NumPy's
vector loops for `power`: to one ulp, the most a CPU's SIMD path is allowed to differ).

One scenario's physics runs on Python floats through these helpers and a sweep's on arrays
through NumPy; a helper that drifted from its ufunc would make a scenario's figures differ
from the same row of a sweep (test_speed_equivalence.py holds the whole model to that).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from deepep_calc.base import arrays

INF, NAN = math.inf, math.nan
VALUES: list[Any] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 3.0, 7.0 / 3.0, 1e-30, 1e300, INF, -INF, NAN]
VALUES += [np.float64(2.5), np.float64(NAN), 4, 0]  # NumPy scalars and ints take one path or the other


def same(got: Any, want: Any) -> bool:
    """Equal values (NaN equals NaN, and the sign of a zero counts)."""
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


@pytest.mark.parametrize(("name", "ufunc"), [("minimum", np.minimum), ("maximum", np.maximum)])
def test_minimum_maximum_equal_the_ufunc(name: str, ufunc: Any) -> None:
    fn = getattr(arrays, name)
    for a, b in itertools.product(VALUES, repeat=2):
        assert same(fn(a, b), ufunc(a, b)), (name, a, b)
    assert type(fn(1.0, 2.0)) is float
    got = fn(np.array([1.0, NAN, 3.0]), np.array([2.0, 1.0, NAN]))
    np.testing.assert_array_equal(got, ufunc(np.array([1.0, NAN, 3.0]), np.array([2.0, 1.0, NAN])))


@pytest.mark.parametrize(("name", "ufunc"), [("ceil", np.ceil), ("floor", np.floor)])
def test_ceil_floor_equal_the_ufunc(name: str, ufunc: Any) -> None:
    fn = getattr(arrays, name)
    for x in [*VALUES, 2.000000001, -2.5, -0.5, -0.3, -1e-300, -4503599627370497.0, 4503599627370497.0]:
        assert same(fn(x), ufunc(x)), (name, x)
    assert all(type(fn(x)) is float for x in (2.5, 0.0, -0.5, -2.5, INF, NAN))
    np.testing.assert_array_equal(fn(np.array([0.5, -1.5, INF])), ufunc(np.array([0.5, -1.5, INF])))


def test_power_equals_the_ufunc() -> None:
    bases = [x for x in VALUES if not isinstance(x, int)] + [0.75, 1.0 - 8.0 / 256.0, 1e-300, 2.0]
    exponents = [*VALUES, 0.8, 8, 3, -2, 2000.0, 0.5]
    with np.errstate(all="ignore"):
        for base, exponent in itertools.product(bases, exponents):
            got, want = arrays.power(base, exponent), np.power(base, exponent)
            # NaN, infinities, zeros and their signs exactly; a finite value to one ulp (libm's
            # `pow` and NumPy's loop may round the last bit apart, as on AVX-512)
            exact = not math.isfinite(want) or want == 0.0
            assert same(got, want) if exact else within_one_ulp(got, float(want)), (base, exponent)
    assert type(arrays.power(0.75, 0.8)) is float
    # An array goes through NumPy's vector loop, which on some CPUs (AVX-512) rounds the last
    # bit differently from the C `pow` a scalar takes: one ulp is the contract there, not zero.
    grid = np.linspace(0.01, 64.0, 257)
    looped = np.power(grid, 0.37)
    assert all(within_one_ulp(arrays.power(float(x), 0.37), looped[i]) for i, x in enumerate(grid))


def within_one_ulp(got: float, want: float) -> bool:
    """Equal, or one representable double apart (both finite)."""
    return got == want or np.nextafter(want, np.inf) == got or np.nextafter(want, -np.inf) == got


def test_one_ulp_is_one_step_and_no_more() -> None:
    assert within_one_ulp(9.882117688026186, 9.882117688026185)  # the AVX-512 disagreement seen
    x = 9.882117688026185
    two_up = np.nextafter(np.nextafter(x, np.inf), np.inf)
    assert not within_one_ulp(float(two_up), x) and not within_one_ulp(x * (1 + 1e-12), x)


def test_where_takes_a_branch_on_a_bool_and_the_ufunc_otherwise() -> None:
    assert arrays.where(True, 1.0, 2.0) == 1.0 and arrays.where(False, 1.0, 2.0) == 2.0
    assert arrays.where(np.bool_(False), 1.0, 2.0) == 2.0
    np.testing.assert_array_equal(arrays.where(np.array([True, False]), 1.0, 2.0), [1.0, 2.0])
    for condition in (True, False):  # an array branch broadcasts, as np.where does
        got = arrays.where(condition, np.int8(2), np.array([0, 1], dtype=np.int8))
        np.testing.assert_array_equal(got, np.where(condition, np.int8(2), np.array([0, 1], dtype=np.int8)))
        assert got.shape == (2,)


def test_floats_is_asarray_but_a_scalar_stays_a_python_float() -> None:
    for x in [3, 2.5, np.float64(2.5), np.asarray(7), np.asarray(1.5), True]:
        got = arrays.floats(x)
        assert type(got) is float and got == float(np.asarray(x, dtype=float))
    arr = arrays.floats([1, 2])
    assert isinstance(arr, np.ndarray) and arr.dtype == float and arr.tolist() == [1.0, 2.0]
    same_array = np.array([1.0, 2.0])
    assert arrays.floats(same_array) is same_array


def test_invert_negates_a_bool_and_an_array() -> None:
    assert arrays.invert(True) is False and arrays.invert(False) is True
    assert arrays.invert(np.bool_(True)) == np.False_
    np.testing.assert_array_equal(arrays.invert(np.array([True, False])), [False, True])


def test_the_lazy_numpy_handle_is_numpy() -> None:
    """`arrays.np` hands out NumPy's own objects (loaded on the first name asked), and once
    NumPy is in, its float64 counts as a plain scalar: the builtin path takes it."""
    assert arrays.np.ndarray is np.ndarray and arrays.np.minimum is np.minimum
    assert arrays.np.linalg is np.linalg  # a lazily imported submodule of NumPy's own
    assert np.float64 in arrays.SCALARS and arrays.loaded()
    assert type(arrays.minimum(np.float64(1.0), 2.0)) is np.float64  # the builtin's pick, as given
    assert arrays.is_array(np.zeros(2)) and not arrays.is_array(1.0) and not arrays.is_array([1.0])
    assert arrays.plain(np.array([1.0, 2.0])) == [1.0, 2.0] and type(arrays.plain(np.int8(3))) is int
    assert arrays.first_float(np.array([2.5, 3.0])) == 2.5 and arrays.first_float(7) == 7.0
    with pytest.raises(AttributeError):
        _ = arrays.np.no_such_numpy_name
