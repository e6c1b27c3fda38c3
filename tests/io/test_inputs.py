"""The files a question names, read before it is resolved (`io/inputs.py`): `resolve_files` is
`question.resolve` with a config.json (`--model PATH`) read where the model is checked, and a
calibration profile (`--calibration FILE`) read once the question is valid and kept on the
resolved question, so that one evaluation reads it once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calibrate.user_runs import records, trt_set
from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.calibrate.profile import build_profile, to_toml
from deepep_calc.io.inputs import resolve_files
from deepep_calc.io.profile import load_profile, write_text_atomic
from deepep_calc.question.scenario import Scenario, resolve
from one_line import assert_one_line
from paths import FIXTURES

DEEPSEEK_CONFIG = FIXTURES / "hf" / "deepseek-v3"  # a folder holding DeepSeek-V3's config.json


def test_a_config_json_is_read_where_the_model_is_checked() -> None:
    """`resolve` alone takes presets only; `resolve_files` reads the folder's config.json (DeepSeek-V3:
    hidden size 7168), named after its folder, and keeps the spec for the what-ifs."""
    with pytest.raises(InputError, match="expected a preset here"):
        resolve(Scenario(model=str(DEEPSEEK_CONFIG)))
    r = resolve_files(Scenario(model=str(DEEPSEEK_CONFIG), nodes=2))
    assert (r.model.name, r.model.hidden) == ("deepseek-v3", 7168)
    assert list(r.models) == [str(DEEPSEEK_CONFIG)]
    assert r.profile is None  # no --calibration


def test_a_preset_and_no_profile_resolve_as_resolve_does() -> None:
    s = Scenario(model="deepseek-v3", nodes=4)
    assert resolve_files(s).model == resolve(s).model and resolve_files(s).profile is None


def test_a_missing_file_is_a_one_line_refusal_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileInputError) as info:
        resolve_files(Scenario(model=str(tmp_path / "config.json")))
    assert_one_line(info.value, "config.json", "no such file or folder")
    with pytest.raises(FileInputError) as info:
        resolve_files(Scenario(calibration=str(tmp_path / "p.toml")))
    assert_one_line(info.value, "p.toml", "no such file")


def test_the_profile_is_read_only_once_the_question_is_valid(tmp_path: Path) -> None:
    """An invalid question is refused for itself, not for the profile it names (which is missing)."""
    with pytest.raises(InputError) as info:
        resolve_files(Scenario(nodes=0, calibration=str(tmp_path / "p.toml")))
    assert info.value.field == "--nodes"


def test_the_profile_read_is_kept_on_the_resolved_question(tmp_path: Path) -> None:
    rs, cells, fit = trt_set()
    out = tmp_path / "mine.toml"
    write_text_atomic(out, to_toml(build_profile(rs, cells, fit, None, records(rs), out.name)), False)
    r = resolve_files(Scenario(comms=1, concurrency=4, calibration=str(out)))
    assert r.profile is load_profile(out)  # parsed once per name and content
    assert r.profile.label == "profile mine.toml"


def test_one_evaluation_reads_its_profile_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every arm asks for the scenario's profile (its cells, its constants); the file is read
    once per evaluation, not once per question, and the answer is the one the profile gives."""
    import deepep_calc.io.profile as profile_module
    from deepep_calc import evaluate as evaluate_scenario

    rs, cells, fit = trt_set()
    out = tmp_path / "mine.toml"
    write_text_atomic(out, to_toml(build_profile(rs, cells, fit, None, records(rs), out.name)), False)
    reads: list[str] = []
    real = profile_module.read_text_file

    def counting(path: Any, limit: int) -> str:
        reads.append(str(path))
        return real(path, limit)

    monkeypatch.setattr(profile_module, "read_text_file", counting)
    result = evaluate_scenario(Scenario(comms=1, concurrency=4, calibration=str(out)))
    assert [p for p in reads if p.endswith("mine.toml")] == [str(out)]
    assert result.arms["deepep"].measured_cell is not None  # the profile's own cell was replayed
