"""benchmarks/mutation.py: its module table points at real code and tests, and its filters keep
the mutants docs/testing.md says they keep (cosmic-ray itself is not needed for these)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "benchmarks" / "mutation.py")
assert _spec is not None and _spec.loader is not None
mutation = importlib.util.module_from_spec(_spec)
sys.modules["mutation_script"] = mutation  # dataclasses look their module up while defining
_spec.loader.exec_module(mutation)


def test_every_target_names_existing_code_and_tests() -> None:
    names = [t.name for t in mutation.TARGETS]
    assert len(names) == len(set(names))
    for t in mutation.TARGETS:
        assert (ROOT / t.path).is_file(), t.path
        assert t.tests and all((ROOT / f).is_file() for f in t.tests), t.tests
        if t.functions:
            assert len(mutation.function_spans(ROOT / t.path, t.functions)) >= len(t.functions)


@pytest.mark.parametrize(
    "name,kept",
    [
        ("core/ReplaceBinaryOperator_Add_Sub", True),
        ("core/ReplaceBinaryOperator_Div_FloorDiv", True),
        ("core/ReplaceBinaryOperator_Mul_BitOr", False),
        ("core/ReplaceBinaryOperator_Add_LShift", False),
        ("core/ReplaceBinaryOperator_BitAnd_BitOr", True),
        ("core/ReplaceComparisonOperator_Lt_LtE", True),
        ("core/ReplaceComparisonOperator_Eq_Is", False),
        ("core/ReplaceComparisonOperator_Is_Eq", False),
        ("core/ReplaceComparisonOperator_Is_IsNot", True),
        ("core/RemoveDecorator", False),
        ("core/NumberReplacer", True),
        ("core/ZeroIterationForLoop", True),
    ],
)
def test_operator_filter(name: str, kept: bool) -> None:
    assert mutation.operator_kept(name) is kept


def test_inert_spans_cover_annotations_and_decorators(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "from functools import lru_cache\n"
        "@lru_cache(maxsize=8)\n"
        "def f(x: int | None = None) -> int | None:\n"
        "    y: float | int = 1\n"
        "    return x\n",
        encoding="utf-8",
    )
    spans = mutation.inert_spans(src)

    def inert(line: int, col: int) -> bool:
        return any(a <= (line, col) < b for a, b in spans)

    assert inert(2, 1) and inert(2, 18)  # the decorator and its number
    assert inert(3, 13)  # `|` of the argument annotation
    assert inert(3, 35)  # `|` of the return annotation
    assert inert(4, 13)  # `|` of a variable annotation
    assert not inert(4, 23) and not inert(5, 11)  # the value 1 and the return run
    with pytest.raises(SystemExit, match="no function named g"):
        mutation.function_spans(src, ["f", "g"])
