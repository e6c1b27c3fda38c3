"""The catalogs' parse cache (catalog/_toml.py) answers what a fresh parse does, and never
gets in the way: a stale, corrupt or unwritable cache only costs the parse."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from deepep_calc.catalog import _toml

PACKAGED = sorted(
    p.name
    for p in resources.files("deepep_calc.catalog").joinpath("data").iterdir()
    if p.name.endswith(".toml")
)


@pytest.fixture
def writing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", False)


@pytest.mark.parametrize("name", PACKAGED)
def test_cached_parse_equals_fresh_parse(name: str, tmp_path: Path, writing: None) -> None:
    text, _ = _toml.packaged_text(name)
    where = tmp_path / name
    where.write_text(text, encoding="utf-8")
    fresh = tomllib.loads(text)
    assert _toml.loads_packaged(text, where) == fresh  # parsed, cache written
    cached = list((tmp_path / "__pycache__").glob(f"{name}.*.marshal"))
    assert len(cached) == 1
    assert _toml.loads_packaged(text, where) == fresh  # from the cache


def test_edited_text_misses_and_replaces_the_stale_entry(tmp_path: Path, writing: None) -> None:
    where = tmp_path / "t.toml"
    assert _toml.loads_packaged("a = 1\n", where) == {"a": 1}
    assert _toml.loads_packaged("a = 2\n", where) == {"a": 2}
    assert len(list((tmp_path / "__pycache__").glob("t.toml.*.marshal"))) == 1


def test_corrupt_cache_is_ignored(tmp_path: Path, writing: None) -> None:
    where = tmp_path / "t.toml"
    _toml.loads_packaged("a = 1\n", where)
    (entry,) = (tmp_path / "__pycache__").glob("*.marshal")
    entry.write_bytes(b"\x00garbage")
    assert _toml.loads_packaged("a = 1\n", where) == {"a": 1}


def test_no_cache_without_bytecode_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert _toml.loads_packaged("a = 1\n", tmp_path / "t.toml") == {"a": 1}
    assert not (tmp_path / "__pycache__").exists()


def test_unwritable_directory_and_unmarshalable_values(tmp_path: Path, writing: None) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    where = blocked / "t.toml"  # its parent is a file: mkdir fails, the parse still answers
    assert _toml.loads_packaged("a = 1\n", where) == {"a": 1}
    dated = tmp_path / "d.toml"
    assert _toml.loads_packaged("d = 2024-01-02\n", dated) == tomllib.loads("d = 2024-01-02\n")
    assert not list((tmp_path / "__pycache__").glob("d.toml.*"))  # a date: parsed every time


def test_not_a_path_is_parsed_not_cached() -> None:
    assert _toml.loads_packaged("a = 1\n", None) == {"a": 1}
