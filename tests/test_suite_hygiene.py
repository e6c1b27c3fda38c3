"""The suite is self-contained: it reads only in-repo fixtures, and CI fails on a quiet skip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def test_no_test_reads_outside_the_repository() -> None:
    """No test or benchmark reaches for a sibling checkout (`../shared` and the like)."""
    pattern = re.compile(r"""REPO\.parent\b|parents\[2\]|\.\./shared|["']shared["'] /""")
    offenders = []
    for path in [*TESTS.rglob("*.py"), *(REPO / "benchmarks").glob("*.py")]:
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert offenders == []


def test_tests_in_folders_take_their_paths_from_one_module() -> None:
    """A test below tests/<package>/ finds the repository through tests/paths.py, never by
    counting parents of its own file, so moving it to another folder breaks nothing."""
    offenders = [
        str(path.relative_to(TESTS))
        for path in TESTS.glob("*/**/*.py")
        if "fixtures" not in path.parts and "Path(__file__)" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


# Suites that cut across the layers, each in a folder whose conftest marks what it collects.
SUITES = {
    "properties": ("property", "slow"),
    "hardening": ("hardening", "slow"),
    "speed": ("speed",),
    "browser": ("browser",),
    "load": ("load", "slow"),
    "e2e": ("e2e", "slow"),
}


SOURCE = REPO / "src" / "deepep_calc"

# Top-level test files that test the product as a whole rather than one module: the layer and
# size rules, the public surface, this file, the CI script, and the developer tools in tools/
# and benchmarks/.
PRODUCT_WIDE = {
    "test_layers.py",
    "test_public_api.py",
    "test_suite_hygiene.py",
    "test_ci_profile.py",
    "test_snapshot_tool.py",
    "test_regenerate_tool.py",
    "test_mutation_script.py",
}


def _packages() -> list[str]:
    """Every package of the source, as a path relative to src/deepep_calc ("" for the root)."""
    found = [p.parent.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("__init__.py")]
    return sorted("" if rel == "." else rel for rel in found)


def _units(package: str) -> set[str]:
    """What a package's test files are named for: its modules, and each subpackage whose
    `__init__.py` defines something (tested as `test_<subpackage>.py` beside its modules' tests)."""
    folder = SOURCE / package
    modules = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
    defining = {
        p.parent.name
        for p in folder.glob("*/__init__.py")
        if re.search(r"^(?:def|class|async def) ", p.read_text(encoding="utf-8"), re.MULTILINE)
    }
    return modules | defining


def _named_for(test: Path, units: set[str]) -> bool:
    """`test_<unit>.py`, or `test_<unit>_<aspect>.py` when one unit's tests are split by aspect."""
    stem = test.stem.removeprefix("test_")
    return any(stem == u or stem.startswith(f"{u}_") for u in units)


def test_the_tests_mirror_the_source_tree() -> None:
    """Every folder of tests/ but the fixtures is a package of src/deepep_calc/ or a suite."""
    packages = set(_packages())
    folders = {
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("*")
        if p.is_dir() and not any(part.startswith((".", "_")) or part == "fixtures" for part in p.parts)
    }
    stray = {f for f in folders if f not in packages and f.split("/")[0] not in SUITES}
    assert stray == set(), stray


@pytest.mark.parametrize("package", _packages())
def test_each_test_file_is_named_for_a_module_of_its_package(package: str) -> None:
    """tests/<package>/test_<module>.py holds the tests of src/deepep_calc/<package>/<module>.py,
    so a module's tests are found by its path, not by grep."""
    tests = sorted((TESTS / package).glob("test_*.py"))
    allowed = PRODUCT_WIDE if package == "" else set()
    stray = [t.name for t in tests if t.name not in allowed and not _named_for(t, _units(package))]
    assert stray == [], f"{package or 'tests/'}: {stray} name no module of the package"


@pytest.mark.parametrize("package", _packages())
def test_each_module_has_a_test_file_named_for_it(package: str) -> None:
    """Every module (and every subpackage that defines something) has at least one test file."""
    tests = list((TESTS / package).glob("test_*.py"))
    untested = sorted(u for u in _units(package) if not any(_named_for(t, {u}) for t in tests))
    assert untested == [], f"{package or 'deepep_calc'}: no test_<module>.py for {untested}"


def test_each_suite_folder_marks_what_it_collects(request: pytest.FixtureRequest) -> None:
    """A suite is selected by its marker: every test its folder collects carries the marks."""
    items = request.session.items
    for folder, marks in SUITES.items():
        inside = [i for i in items if TESTS / folder in i.path.parents]
        if not inside:  # a selection that left the whole suite out
            continue
        for item in inside:
            assert all(item.get_closest_marker(m) is not None for m in marks), (item.nodeid, marks)


def test_real_aiperf_exports_are_in_the_repository() -> None:
    real = sorted((TESTS / "fixtures" / "aiperf").glob("*_isl120.*"))
    assert len(real) >= 15
    assert {p.suffix for p in real} == {".json", ".csv"}


SKIPS = """
import os
import pytest

def test_missing_fixture():
    pytest.skip("../shared fixtures not present")

def test_missing_dependency():
    pytest.importorskip("surely_not_a_module_name_xyz")

@pytest.mark.skipif(True, reason="no FIFOs on this platform")
def test_platform():
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("ci", ["", "1"])
def test_ci_turns_a_skip_for_something_missing_into_a_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    pytester.makeconftest((TESTS / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_skips=SKIPS)
    monkeypatch.setenv("CI", ci)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    if ci:
        result.assert_outcomes(failed=2, skipped=1)
        result.stdout.fnmatch_lines(["*skipped for something missing*"])
    else:
        result.assert_outcomes(skipped=3)


# Test files of other projects the docs cite (DeepEP's own kernel tests), not ours.
EXTERNAL_TESTS = {"test_low_latency.py", "test_internode.py", "test_intranode.py"}
CITED = re.compile(r"(?<![\w/])((?:tests/)?(?:[\w]+/)*test_\w+\.py)(?:::(\w+))?")


def _cited_tests() -> list[tuple[str, str, str | None]]:
    """Every test file (and test) the docs, the README, the code and the tests name:
    (where it is cited, the path or basename, the test name or None)."""
    sources = [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    sources += [
        *(REPO / "src").rglob("*.py"),
        *(REPO / "tools").glob("*.py"),
        *(REPO / "benchmarks").glob("*.py"),
    ]
    sources += [p for p in TESTS.rglob("*.py") if "fixtures" not in p.parts]
    found = []
    for path in sources:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITED.finditer(line):
                if Path(m.group(1)).name not in EXTERNAL_TESTS:
                    found.append((f"{path.relative_to(REPO)}:{n}", m.group(1), m.group(2)))
    return found


def test_every_test_the_docs_and_code_cite_exists() -> None:
    """A moved or renamed test leaves no stale citation behind: a path names a file that exists,
    a bare file name one file of the suite, and `file::test` a test that file defines."""
    files = [p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts]
    stale = []
    for where, cited, name in _cited_tests():
        if cited.startswith("tests/"):
            candidates = [REPO / cited] if (REPO / cited).is_file() else []
        else:
            candidates = [p for p in files if p.as_posix().endswith("/" + cited)]
        if not candidates:
            stale.append(f"{where}: {cited}")
        elif name and not any(
            re.search(rf"^\s*(?:async )?def {name}\b", p.read_text(encoding="utf-8"), re.M)
            for p in candidates
        ):
            stale.append(f"{where}: {cited}::{name}")
    assert stale == [], "\n".join(stale)
