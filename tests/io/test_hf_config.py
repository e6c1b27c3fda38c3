"""Reading a config.json from disk (`io/hf_config.py`): a folder or the file itself (the same
spec either way), named after its folder; a preset taken by name or hub id before any file is
looked for, else a path read (`resolve_model`); every file-level failure is one line.

What the parsed dict must hold (each family's fields) is `tests/catalog/hf/test_spec.py`'s and
each family's `test_<family>.py` beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catalog.hf.configs import FIXTURE_NAMES, FIXTURES, _config
from deepep_calc.base.errors import CalcError, FileInputError, InputError
from deepep_calc.catalog.hf import MAX_CONFIG_BYTES
from deepep_calc.io.hf_config import load_hf_config, resolve_model
from one_line import assert_one_line


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileInputError) as info:
        load_hf_config(tmp_path / "absent")
    assert_one_line(info.value, "absent", "no such file")


def test_folder_without_config(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    with pytest.raises(FileInputError) as info:
        load_hf_config(tmp_path)
    assert_one_line(info.value, "no config.json")


def test_config_json_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    with pytest.raises(FileInputError) as info:
        load_hf_config(tmp_path)
    assert_one_line(info.value, "not a regular file")


def test_oversized_file_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "config.json"
    with big.open("wb") as fh:  # sparse: costs no disk
        fh.truncate(MAX_CONFIG_BYTES + 1)

    def _no_read(*_: Any, **__: Any) -> None:
        raise AssertionError("file was opened")

    monkeypatch.setattr(Path, "open", _no_read)
    with pytest.raises(FileInputError) as info:
        load_hf_config(big)
    assert_one_line(info.value, "5 MB")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "mixtral\xff\xfe"}')
    with pytest.raises(FileInputError) as info:
        load_hf_config(path)
    assert_one_line(info.value, "UTF-8")


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_config("dbrx")).encode())
    assert load_hf_config(path).experts == 16


@pytest.mark.parametrize(
    "text",
    ['{"model_type": "mixtral",', "", "not json", "[" * 100_000, "1" * 5000, '{"a": NaN'],
)
def test_not_json(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text, "utf-8")
    with pytest.raises(FileInputError) as info:
        load_hf_config(path)
    assert_one_line(info.value, "not valid JSON")


def test_a_folder_or_its_config_json_is_named_after_the_folder() -> None:
    """DBRX's config.json (16 experts), read through its folder or directly: the same spec,
    named "dbrx", its source the file."""
    by_folder, by_file = load_hf_config(FIXTURES / "dbrx"), load_hf_config(FIXTURES / "dbrx" / "config.json")
    assert by_folder.name == by_file.name == "dbrx" and by_folder.experts == by_file.experts == 16
    assert by_folder.source == f"config.json at {FIXTURES / 'dbrx' / 'config.json'}"


def test_a_preset_is_found_by_name_or_hub_id_before_any_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--model DeepSeek-V3` is the preset even with a folder of that name in the working
    directory; text that is neither a preset nor looks like a path is refused naming --model,
    and a path that does not exist as the missing file it is."""
    (tmp_path / "DeepSeek-V3").mkdir()
    monkeypatch.chdir(tmp_path)
    assert resolve_model("DeepSeek-V3").name == resolve_model("deepseek-ai/DeepSeek-V3").name == "deepseek-v3"
    with pytest.raises(InputError) as refused:
        resolve_model("no-such-model")
    assert_one_line(refused.value, "--model: 'no-such-model' is not allowed", "or a path to a config.json")
    with pytest.raises(FileInputError) as info:
        resolve_model("models/none/config.json")
    assert_one_line(info.value, "models/none/config.json", "no such file or folder")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_file_and_folder_give_the_same_spec(name: str) -> None:
    folder = load_hf_config(FIXTURES / name)
    file = load_hf_config(FIXTURES / name / "config.json")
    assert folder == file
    assert folder.source == f"config.json at {FIXTURES / name / 'config.json'}"


def test_resolve_paths_to_config_json() -> None:
    spec = resolve_model(str(FIXTURES / "mixtral-8x7b"))
    assert spec.source.startswith("config.json at ")
    assert spec.experts == 8
    by_file = resolve_model(str(FIXTURES / "mixtral-8x7b" / "config.json"))
    assert by_file.as_dict(exclude={"source"}) == spec.as_dict(exclude={"source"})


def test_resolve_relative_folder_without_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    spec = resolve_model("glm-4.5")  # a preset name beats a same-named folder
    assert spec.source.startswith("HF config.json")
    monkeypatch.chdir(FIXTURES / "dbrx")
    assert resolve_model("config.json").source.startswith("config.json at ")


def test_resolve_missing_json_path_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(CalcError) as info:
        resolve_model(str(tmp_path / "nope.json"))
    assert "no such file" in info.value.message
    assert "\n" not in info.value.message
