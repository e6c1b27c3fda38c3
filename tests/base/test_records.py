"""`@row` rows take `==`, hash and `repr` from `Record` instead of generating them: they must
behave as the methods `@dataclass(frozen=True, kw_only=True)` would have generated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from deepep_calc.base.records import Record, row


@row
class Lean(Record):
    name: str
    size: int = 1
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@dataclass(frozen=True, kw_only=True)  # the same declaration, its methods generated
class Generated(Record):
    name: str
    size: int = 1
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


CASES = [
    {"name": "a"},
    {"name": "a", "size": 2, "tags": ("x", "y"), "note": "n", "secret": "s"},
    {"name": 'it\'s "quoted"', "size": -3},
]


@pytest.mark.parametrize("kw", CASES)
def test_repr_is_the_generated_one(kw: dict) -> None:
    assert repr(Lean(**kw)).removeprefix("Lean") == repr(Generated(**kw)).removeprefix("Generated")
    assert "secret" not in repr(Lean(**kw))


@pytest.mark.parametrize("a", CASES)
@pytest.mark.parametrize("b", CASES)
def test_equality_and_hash_are_the_generated_ones(a: dict, b: dict) -> None:
    assert (Lean(**a) == Lean(**b)) == (Generated(**a) == Generated(**b))
    if Lean(**a) == Lean(**b):
        assert hash(Lean(**a)) == hash(Lean(**b))


def test_compare_false_fields_are_left_out_and_other_classes_are_unequal() -> None:
    assert Lean(name="a", note="one") == Lean(name="a", note="two")
    assert hash(Lean(name="a", note="one")) == hash(Lean(name="a", note="two"))
    assert Lean(name="a") != Generated(name="a")
    assert Lean(name="a") != Lean(name="a", size=2)
    assert Lean.__eq__(Lean(name="a"), "a") is NotImplemented


def test_a_row_is_still_a_frozen_keyword_only_dataclass() -> None:
    r = Lean(name="a")
    assert dataclasses.is_dataclass(r)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Lean("a")  # type: ignore[misc]
    assert r.copy(size=5) == Lean(name="a", size=5)
    assert "__eq__" not in vars(Lean) and "__repr__" not in vars(Lean)  # inherited, not generated
