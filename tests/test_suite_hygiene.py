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


def test_the_tests_mirror_the_source_tree() -> None:
    """Every folder of tests/ but the fixtures is a package of src/deepep_calc/ or a suite."""
    packages = {p.name for p in (REPO / "src" / "deepep_calc").iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    folders.discard("fixtures")
    assert folders <= packages | set(SUITES), folders - packages - set(SUITES)


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
