"""`catalog/_toml.py`: the catalogs' parse and row caches answer what a fresh parse does, and
never get in the way: a stale, corrupt or unwritable cache only costs the parse. A broken or
duplicated row is a packaging bug, named by file, row and field."""

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


# The validated rows' cache: a pickle of the rows, written after they all validated ------------

from deepep_calc.base.records import Record  # noqa: E402
from deepep_calc.catalog.engines import Engine  # noqa: E402
from deepep_calc.catalog.hardware import Instance  # noqa: E402
from deepep_calc.catalog.measured import Cell, Fact  # noqa: E402
from deepep_calc.catalog.transports import Transport  # noqa: E402

ROWS = [
    ("instances.toml", "instance", Instance),
    ("engines.toml", "engine", Engine),
    ("transports.toml", "transport", Transport),
    ("measured.toml", "cell", Cell),
    ("measured.toml", "fact", Fact),
]


@pytest.fixture
def beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writing: None) -> Path:
    """Packaged texts read as if they lay in tmp_path (so their caches are written there)."""
    real = _toml.packaged_text

    def moved(filename: str) -> tuple[str, Path]:
        text, _ = real(filename)
        return text, tmp_path / filename

    monkeypatch.setattr(_toml, "packaged_text", moved)
    return tmp_path


def _pickles(folder: Path) -> list[Path]:
    return sorted((folder / "__pycache__").glob("*.pickle"))


@pytest.mark.parametrize(("filename", "part", "cls"), ROWS, ids=[r[1] for r in ROWS])
def test_cached_rows_equal_freshly_validated_rows(filename: str, part: str, cls: type, beside: Path) -> None:
    fresh = _toml._rows(filename, part, cls)
    assert _toml.validate_rows(filename, part, cls) == fresh  # validated, pickle written
    (entry,) = _pickles(beside)
    assert entry.name.startswith(f"{filename}.") and entry.name.endswith(f".{part}.pickle")
    calls: list[int] = []

    def build() -> dict[str, Record]:
        calls.append(1)
        return fresh

    assert _toml.validated(filename, part, cls, build) == fresh
    assert calls == []  # read from the pickle: the rows were not built again


def test_constants_table_and_model_presets_go_through_the_same_cache(
    beside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepep_calc.catalog import model_catalog
    from deepep_calc.catalog.constants import Constant

    fresh = _toml._tables("constants.toml", Constant)
    assert _toml.validate_table("constants.toml", Constant) == fresh
    assert _toml.validate_table("constants.toml", Constant) == fresh
    monkeypatch.setattr(model_catalog, "packaged_text", _toml.packaged_text)  # the moved texts
    presets = model_catalog._packaged_models.__wrapped__()
    assert model_catalog._packaged_models.__wrapped__() == presets == model_catalog.load_models()
    assert sorted(p.name.split(".")[-2] for p in _pickles(beside)) == ["model", "tables"]


@pytest.mark.parametrize("damage", [b"\x00garbage", None], ids=["corrupt", "rows-of-another-type"])
def test_a_damaged_or_foreign_pickle_is_only_a_miss(damage: bytes | None, beside: Path) -> None:
    import pickle

    fresh = _toml.validate_rows("instances.toml", "instance", Instance)
    (entry,) = _pickles(beside)
    entry.write_bytes(damage if damage is not None else pickle.dumps({"p5en": "not an Instance"}))
    calls: list[int] = []

    def build() -> dict[str, Record]:
        calls.append(1)
        return _toml._rows("instances.toml", "instance", Instance)

    assert _toml.validated("instances.toml", "instance", Instance, build) == fresh
    assert calls == [1]  # rebuilt, and the pickle rewritten with good rows
    assert _toml.validated("instances.toml", "instance", Instance, build) == fresh
    assert calls == [1]


def test_changed_row_code_misses(beside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _toml.validate_rows("engines.toml", "engine", Engine)
    (before,) = _pickles(beside)
    monkeypatch.setattr(_toml, "_code_digest", lambda: b"another version of the row classes")
    calls: list[int] = []

    def build() -> dict[str, Engine]:
        calls.append(1)
        return _toml._rows("engines.toml", "engine", Engine)

    _toml.validated("engines.toml", "engine", Engine, build)
    assert calls == [1]
    (after,) = _pickles(beside)  # the stale entry of the old code is replaced, not kept
    assert after != before


def test_a_broken_row_is_named_with_its_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepep_calc.base.errors import CalcError

    text = _toml.packaged_text("instances.toml")[0].replace("gpus_per_node = 8", "gpus_per_node = 0", 1)
    monkeypatch.setattr(_toml, "packaged_text", lambda _name: (text, tmp_path / "instances.toml"))
    monkeypatch.setattr(_toml, "read_data", lambda _name: tomllib.loads(text))
    with pytest.raises(
        CalcError, match=r"catalog instances.toml: instance '\w+': gpus_per_node: .*greater than 0"
    ):
        _toml.validate_rows("instances.toml", "instance", Instance)
    assert not list(tmp_path.glob("__pycache__/*.pickle"))  # nothing cached for a broken file


def test_a_pycache_prefix_moves_the_caches_as_it_moves_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writing: None
) -> None:
    """A read-only install caches with PYTHONPYCACHEPREFIX: the caches mirror the data's
    absolute path under the prefix, and nothing is written beside the data."""
    data = tmp_path / "site" / "data"
    data.mkdir(parents=True)
    prefix = tmp_path / "prefix"
    monkeypatch.setattr("sys.pycache_prefix", str(prefix))
    where = data / "t.toml"
    assert _toml.loads_packaged("a = 1\n", where) == {"a": 1}
    (entry,) = prefix.rglob("t.toml.*.marshal")
    assert entry.parent == prefix / data.resolve().relative_to(data.resolve().anchor)
    assert not (data / "__pycache__").exists()
    entry.write_bytes(__import__("marshal").dumps({"a": 2}))  # what is read is the prefix's copy
    assert _toml.loads_packaged("a = 1\n", where) == {"a": 2}


def test_a_duplicate_row_is_a_packaging_bug_named_by_file_and_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepep_calc.base.errors import CalcError

    monkeypatch.setattr(_toml, "read_data", lambda _name: {"engine": [{"name": "x"}, {"name": "x"}]})
    monkeypatch.setattr(_toml, "_one", lambda _model, raw, _where: raw)  # the rows need not validate
    with pytest.raises(CalcError, match=r"^catalog engines.toml: duplicate engine 'x'$"):
        _toml._rows("engines.toml", "engine", Engine)
