"""The sweep table's number text (`io/sweep_table/formats.py`): rounding to significant digits as
printf does, and the standard-library writer's floats printed exactly as Arrow prints them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepep_calc.io.sweep_table import columns, round_significant, value_columns
from deepep_calc.io.sweep_table import formats as sweep_formats


@pytest.mark.parametrize("digits", [1, 3, 6, 10, 16])
def test_round_significant_matches_printf(digits: int) -> None:
    """The rounded double is printf's `%.{digits-1}e` value (a tie may land one unit away)."""
    rng = np.random.default_rng(digits)
    x = rng.random(20_000) * 10.0 ** rng.integers(-12, 15, 20_000) * rng.choice([-1, 1], 20_000)
    got = round_significant(x, digits)
    exact = 0
    for v, r in zip(x.tolist(), got.tolist(), strict=True):
        ref = float(f"{v:.{digits - 1}e}")
        unit = 10.0 ** (math.floor(math.log10(abs(ref))) - digits + 1)
        assert abs(r - ref) <= unit * (1 + 1e-9), (v, r, ref)
        exact += r == ref
        assert len(repr(r).lstrip("-").split("e")[0].replace(".", "").strip("0")) <= digits, (v, r)
    assert exact >= 0.999 * len(x)


def test_decimal_exponent_shortcut_is_exact_for_every_binary_exponent() -> None:
    """round_significant takes floor(n * log10 2) as an integer multiply and shift; a double's
    binary exponents (frexp's, minus one) run from -1075 to 1023."""
    n = np.arange(-1100, 1101, dtype=np.int32)
    shortcut = (n * sweep_formats._LOG10_2_NUM) >> sweep_formats._LOG10_2_SHIFT
    exact = [math.floor(int(k) * math.log10(2)) for k in n]
    assert shortcut.tolist() == exact


def test_round_significant_keeps_specials() -> None:
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7e308, 999999.5, 9.9999996])
    got = round_significant(x, 6)
    assert got[0] == 0 and np.isnan(got[2]) and got[3] == np.inf and got[4] == -np.inf
    assert got[6] == 1.7e308 and got[7] == 1e6 and got[8] == 10.0


def _arrow_text(values: np.ndarray) -> list[str]:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.compute as pc

    return pc.cast(pa.array(values), pa.string()).to_pylist()


def test_fallback_float_text_is_arrows_on_every_kind_of_double() -> None:
    """Arrow writes plain decimals for decimal exponents -6..9 and d.dde+N beyond; Python's repr
    switches at -4 and 16. Random bit patterns (subnormals, NaN payloads, huge and tiny values),
    values near the switches and values rounded as the CSV rounds them must all print alike."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64)
    spread = 10.0 ** rng.uniform(-12, 24, 20_000) * rng.choice([-1.0, 1.0], 20_000)
    edges = np.array([1e-7, 9.99e-7, 1e-6, 1e-5, 1.5e-5, 1e-4, 1e9, 9.99999e9, 1e10, 1.2e10, 1e16, 1.2e17])
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 2.2250738585072014e-308, 1.8e308 / 1.1])
    rounded = [round_significant(spread, d) for d in (1, 2, 6, 10, 14)]
    values = np.concatenate([bits, spread, edges, -edges, special, *rounded])
    expected = _arrow_text(values)
    got = [sweep_formats._float_text(v) for v in values.tolist()]
    wrong = [(v, e, g) for v, e, g in zip(values.tolist(), expected, got, strict=True) if e != g]
    assert not wrong, wrong[:5]


def test_the_columns_are_the_fields_then_each_arms_figures_then_the_tags() -> None:
    """33 scenario fields; per arm (deepep, alternative, replica) six figures and a feasible flag
    (21); two result figures; the verdict and the recommended arm; a tag for each of the 20
    figures: 33 + 21 + 2 + 2 + 20 = 78. `--bounds` adds per arm two codes and two NIC shares and
    their 6 tags (+18); a disaggregated grid six figures, a flag, three labels and 6 tags (+16)."""
    cols = columns()
    assert len(cols) == 78 and len(dict(cols)) == 78  # no name twice
    assert cols[:3] == [("model", "str"), ("instance", "str"), ("nodes", "int")]
    assert ("cuda_graphs", "bool") in cols and ("deepep_feasible", "bool") in cols
    assert cols[-1] == ("tax_ms_per_token_tag", "str")
    assert [c for c, _ in cols if c.endswith("_tag")] == [f"{c}_tag" for c in value_columns()]
    assert len(value_columns()) == 20
    assert len(columns(bounds=True)) == 78 + 18 and ("replica_exchange_bound", "str") in columns(bounds=True)
    assert len(columns(disagg=True)) == 78 + 16 and ("disagg_feasible", "bool") in columns(disagg=True)
    assert columns(keep_invalid=True) == [*cols, ("skipped_reason", "str")]


def test_cell_text_by_kind() -> None:
    """Empty for a missing value, true / false for flags, Arrow's float layout (2 not 2.0)."""
    assert sweep_formats._text(None, "float") == ""
    assert sweep_formats._text(True, "bool") == "true" and sweep_formats._text(0, "bool") == "false"
    assert sweep_formats._text(2.0, "float") == "2" and sweep_formats._text(3, "int") == "3"
    assert sweep_formats._text_list(np.array([True, False]), "bool") == ["true", "false"]
    assert sweep_formats._text_list(np.array([1e-5, 1e10]), "float") == ["0.00001", "1e+10"]
