"""The product's words (and a field's flag spelling) are defined once, in base/vocabulary.py."""

from __future__ import annotations

import re

from deepep_calc.base import vocabulary as v
from deepep_calc.decide.verdict import ARM_NAMES, NO_ARM
from paths import REPO

SRC = REPO / "src" / "deepep_calc"

# A literal copy of one of the lists, in any order of its words
COPIES = {
    "the arms": re.compile(r"""\(\s*"deepep",\s*"allgather",\s*"tp",\s*"replica"\s*[,)]"""),
    "the verdict codes": re.compile(
        r"""\(\s*"dense",\s*"(?:deepep|capacity)",\s*"(?:deepep|capacity)"\s*\)"""
    ),
    "the verdict symbols": re.compile(r"""["']dense["']\s*:\s*["']■"""),
    "the flag spelling": re.compile(r"""replace\(\s*['"]_['"],\s*['"]-['"]\s*\)"""),
    "the yes words": re.compile(
        r"""\(\s*"(?:on|true)",\s*"(?:true|yes|on|1)",\s*"(?:1|on|yes)",\s*"(?:yes|1)"\s*\)"""
    ),
}


def test_orders_the_stored_columns_rely_on() -> None:
    assert v.ARMS == ("deepep", "allgather", "tp", "replica")
    assert v.VERDICT_CODES == ("dense", "deepep", "capacity")  # a sweep's int8 verdict column
    assert set(v.VERDICTS_SHOWN) == set(v.VERDICT_CODES) == set(v.SYMBOLS)
    assert (*v.ARMS, NO_ARM) == ARM_NAMES  # a sweep's int8 recommended-arm column
    assert not set(v.TRUE_WORDS) & set(v.FALSE_WORDS)
    assert v.flag_of("max_qps") == "--max-qps" and v.flag_of("nodes") == "--nodes"


def test_no_module_declares_its_own_copy() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "base/vocabulary.py":
            continue
        code = path.read_text(encoding="utf-8")
        found += [f"{rel}: {what}" for what, pattern in COPIES.items() if pattern.search(code)]
    assert not found, "import these from deepep_calc.base.vocabulary instead: " + "; ".join(found)


def test_a_yes_no_is_written_back_as_the_first_word_each_face_accepts() -> None:
    """An error line quoting a yes / no says true or false, a word the CLI, a sweep list, the form
    and the JSON API all accept, never Python's True."""
    from deepep_calc.base.vocabulary import FALSE_WORDS, TRUE_WORDS, bool_word

    assert (bool_word(True), bool_word(False)) == ("true", "false")
    assert bool_word(True) in TRUE_WORDS and bool_word(False) in FALSE_WORDS


CITED = re.compile(r"`([a-z_]+(?:/[a-z_]+)*\.py|[a-z_]+/)(?::\s*([A-Za-z_][\w.]*(?:,\s*[A-Za-z_][\w.]*)*))?`")


def test_the_glossary_names_code_that_exists() -> None:
    """docs/glossary.md says where each word lives (`physics/deepep.py: KernelSite`): every module
    it names exists under src/deepep_calc/ and defines or uses every name it lists there, so the
    glossary cannot drift from the code it describes."""
    stale = []
    for m in CITED.finditer((REPO / "docs" / "glossary.md").read_text(encoding="utf-8")):
        path, names = SRC / m.group(1), m.group(2)
        if not path.exists():
            stale.append(m.group(1))
        elif names and path.is_file():
            body = path.read_text(encoding="utf-8")
            stale += [
                f"{m.group(1)}: {n}"
                for n in names.split(", ")
                if not re.search(rf"\b{n.split('.')[-1]}\b", body)
            ]
    assert stale == []
