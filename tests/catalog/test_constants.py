"""`catalog/constants.py`: the assumed constants (`data/constants.toml`) with their spread, and
`Assumptions`, the constants in force as a value (a what-if changes some without touching the
catalog or another evaluation's)."""

from __future__ import annotations

import re

import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.base.records import RecordError
from deepep_calc.catalog.constants import CATALOG, Assumptions, Constant, const, load_constants
from paths import REPO

CONSTANTS = load_constants()


def test_every_constant_the_code_reads_is_in_the_table() -> None:
    """`const("x")` and `assumptions.const("x")` anywhere in src/ name a row of constants.toml."""
    src = REPO / "src" / "deepep_calc"
    pattern = re.compile(r"""\bconst\(\s*["']([a-z_0-9]+)["']""")
    named = {m for p in src.rglob("*.py") for m in pattern.findall(p.read_text(encoding="utf-8"))}
    assert "noise_band" in named  # the scan finds them
    assert named <= set(CONSTANTS), named - set(CONSTANTS)


def test_each_row_says_its_unit_and_source_and_is_assumed_unless_it_says_otherwise() -> None:
    for name, c in CONSTANTS.items():
        assert c.unit and c.source, name
        assert c.spread >= 0
    assert Constant.validate({"value": 1.0, "spread": 0.0, "unit": "1", "source": "s"}).tag == "assumed"


def test_a_constant_as_a_quantity() -> None:
    c = Constant(tag="measured", value=2.5, spread=0.1, unit="us", source="bench")
    q = c.q()
    assert (q.scalar, q.unit, q.tag, q.source) == (2.5, "us", Tag.MEASURED, "bench")


def test_a_negative_spread_or_an_unknown_tag_is_refused() -> None:
    with pytest.raises(RecordError) as info:
        Constant.validate({"value": 1.0, "spread": -0.1, "unit": "1", "source": "s"})
    assert info.value.loc == "spread"
    with pytest.raises(RecordError) as info:
        Constant.validate({"tag": "guessed", "value": 1.0, "spread": 0.0, "unit": "1", "source": "s"})
    assert info.value.loc == "tag"


def test_const_is_the_catalog_value_shared() -> None:
    row = CONSTANTS["noise_band"]
    q = const("noise_band")
    assert (q.scalar, q.unit, q.source) == (row.value, row.unit, row.source)
    assert const("noise_band") is q  # one shared instance: quantities are never mutated
    assert CATALOG.const("noise_band") is q


def test_a_changed_constant_is_tagged_assumed_and_says_so() -> None:
    changed = CATALOG.changed(hbm_efficiency=0.7)
    q = changed.const("hbm_efficiency")
    assert (q.scalar, q.unit, q.tag) == (0.7, CONSTANTS["hbm_efficiency"].unit, Tag.ASSUMED)
    assert q.source == "hbm_efficiency set to 0.7 (sensitivity case)"
    assert changed.const("noise_band") is const("noise_band")  # the others are the catalog's
    assert CATALOG.const("hbm_efficiency").scalar == CONSTANTS["hbm_efficiency"].value  # untouched


def test_equal_changes_are_equal_values_in_any_order() -> None:
    a = CATALOG.with_values({"b": 2, "a": 1})
    b = CATALOG.changed(a=1.0).changed(b=2.0)
    assert a == b and hash(a) == hash(b)
    assert a.values == (("a", 1.0), ("b", 2.0))  # sorted, floats
    assert CATALOG.changed(a=1).changed(a=3).values == (("a", 3.0),)  # a later change wins
    assert Assumptions() == CATALOG and CATALOG.values == ()


def test_transport_figures_are_read_by_transport() -> None:
    a = CATALOG.with_values(
        {"transport:efa-proxy:bw_k1_gb_s": 5.0, "transport:efa-gda:wire_efficiency": 0.5, "noise_band": 0.1}
    )
    assert a.transport_figures("efa-proxy") == {"bw_k1_gb_s": 5.0}
    assert a.transport_figures("efa-gda") == {"wire_efficiency": 0.5}
    assert a.transport_figures("efa") == {}  # a prefix of a name is not the name
    assert CATALOG.transport_figures("efa-proxy") == {}


def test_assumptions_are_values() -> None:
    """A changed constant is a new value, tagged assumed and saying so; the catalog's own
    (`CATALOG`) is untouched, and equal changes make equal, hashable values (cache keys)."""
    base = const("hbm_efficiency")
    a = CATALOG.changed(hbm_efficiency=0.9)
    assert a.const("hbm_efficiency").value == 0.9
    assert a.const("hbm_efficiency").tag is Tag.ASSUMED
    assert a.const("hbm_efficiency").source == "hbm_efficiency set to 0.9 (sensitivity case)"
    b = a.changed(compute_efficiency=0.5)
    assert b.const("hbm_efficiency").value == 0.9 and b.const("compute_efficiency").value == 0.5
    assert a.const("compute_efficiency").value == load_constants()["compute_efficiency"].value
    assert CATALOG.const("hbm_efficiency") is base
    assert b == CATALOG.with_values({"compute_efficiency": 0.5, "hbm_efficiency": 0.9})
    assert hash(b) == hash(CATALOG.changed(compute_efficiency=0.5, hbm_efficiency=0.9))
    assert Assumptions() == CATALOG and a != CATALOG
