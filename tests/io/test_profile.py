"""The calibration profile as a file (`io/profile.py`): its text read with one-line errors into a
checked profile (the checks themselves are the fit's, `fit/profile.py`), the sha256 fingerprint
of every input, the refusal of a profile whose inputs found again have changed (issue 10 item 10:
imports that would lie about provenance are refused), and the atomic write.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from calibrate.user_runs import DEEPEP_NAME, DENSE_NAME, REAL, records, trt_set
from cli_runner import run_cli
from deepep_calc import cli
from deepep_calc.base.errors import FileInputError
from deepep_calc.calibrate.profile import build_profile, to_toml
from deepep_calc.io.profile import fingerprint, load_profile, read_profile_text, write_text_atomic
from one_line import assert_one_line

run = run_cli


def test_a_fingerprint_is_the_sha256_and_the_size(tmp_path: Path) -> None:
    """sha256("abc") is FIPS 180-2's first test vector; a file over the 64 kB read chunk hashes
    as one piece (hashlib over the whole bytes)."""
    small = tmp_path / "abc"
    small.write_bytes(b"abc")
    assert fingerprint(small) == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 3)
    big = tmp_path / "big"
    data = bytes(range(256)) * 1000  # 256,000 bytes: four chunks
    big.write_bytes(data)
    assert fingerprint(big) == (hashlib.sha256(data).hexdigest(), 256_000)


def test_reading_a_profile_follows_a_link_and_says_why_it_cannot(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text("x = 1\n")
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    assert read_profile_text(link, 100) == (real, "x = 1\n")  # the resolved path, its text
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "gone.toml")
    cases = [
        (tmp_path / "missing.toml", "no such file (expected a profile written by `deepep-calc calibrate`)"),
        (dangling, "; it is a symbolic link to a missing target"),
        (tmp_path, "is a directory; expected a calibration profile (.toml)"),
    ]
    for path, needle in cases:
        with pytest.raises(FileInputError) as info:
            read_profile_text(path, 100)
        assert_one_line(info.value, str(path), needle)
    with pytest.raises(FileInputError) as info:
        read_profile_text(real, 3)  # the limit the caller sets: 6 bytes are over 3
    assert_one_line(info.value, "file is 6 bytes, over the 3 bytes limit")


def test_a_profile_is_written_whole_and_over_a_file_only_with_force(tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    write_text_atomic(out, "a = 1\n", force=False)
    assert out.read_text() == "a = 1\n"
    with pytest.raises(FileInputError) as info:
        write_text_atomic(out, "a = 2\n", force=False)
    assert_one_line(info.value, "p.toml", "already exists")
    assert info.value.field == "-o" and out.read_text() == "a = 1\n"
    write_text_atomic(out, "a = 2\n", force=True)
    assert out.read_text() == "a = 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.toml"]  # no temporary file left


# Profiles: their scenario and their inputs ------------------------------------------------------


@pytest.fixture()
def profile(tmp_path: Path) -> Path:
    inputs = tmp_path / "runs"
    inputs.mkdir()
    for name in (DENSE_NAME, DEEPEP_NAME):
        shutil.copy(REAL / name, inputs / name)
    out = tmp_path / "p.toml"
    cli.main(
        [
            "calibrate",
            "--dense",
            str(inputs / DENSE_NAME),
            "--deepep",
            str(inputs / DEEPEP_NAME),
            "-o",
            str(out),
            "--json",
        ]
    )
    return out


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("nodes", "-5", "scenario.nodes = -5 is not allowed; expected a whole number greater than 0"),
        ("concurrency", "0", "scenario.concurrency = 0"),
        ("isl", "100000000", "scenario.isl = 100000000"),
        ("transport", '"warp-drive"', "scenario.transport = 'warp-drive'"),
        ("instance", '"p9"', "scenario.instance = 'p9'"),
    ],
)
def test_a_profile_scenario_with_nonsense_is_refused(
    profile: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, needle: str
) -> None:
    text = profile.read_text()
    edited = re.sub(rf"(?m)^({key} = ).*$", rf"\g<1>{value}", text, count=1)
    assert edited != text
    profile.write_text(edited)
    with pytest.raises(FileInputError) as info:
        load_profile(profile)
    assert needle in info.value.message and "\n" not in info.value.message
    code, _, err = run_cli(capsys, "evaluate", "--calibration", profile)
    assert code == 2 and needle in err


def test_a_changed_input_file_is_caught_by_its_fingerprint(profile: Path) -> None:
    load_profile(profile)  # the files are as recorded
    dense = profile.parent / "runs" / DENSE_NAME
    original = dense.read_text("utf-8")
    doc = json.loads(original)
    doc["output_token_throughput"]["avg"] *= 1.5  # a re-run into the same file name
    dense.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(FileInputError) as info:
        load_profile(profile)
    assert "dense input" in info.value.message and "has changed since calibration" in info.value.message
    dense.write_text(original, "utf-8")
    load_profile(profile)  # restored: accepted again


def test_a_profile_without_its_inputs_still_loads(profile: Path) -> None:
    shutil.rmtree(profile.parent / "runs")
    assert load_profile(profile).inputs  # profiles travel without the files they rest on


def test_an_input_recorded_by_name_is_looked_for_beside_the_profile(profile: Path) -> None:
    """A relative path is looked for as recorded and beside the profile: found there changed, the
    profile is refused; found as recorded, it is accepted."""
    text = profile.read_text()
    edited = text.replace(str(profile.parent / "runs" / DENSE_NAME), DENSE_NAME, 1)
    assert edited != text
    profile.write_text(edited)
    load_profile(profile)  # not beside the profile: gone, which is fine
    beside = profile.parent / DENSE_NAME
    doc = json.loads((REAL / DENSE_NAME).read_text("utf-8"))
    doc["output_token_throughput"]["avg"] *= 1.5
    beside.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(FileInputError) as info:
        load_profile(profile)
    assert_one_line(info.value, "its dense input", DENSE_NAME, "has changed since calibration")
    shutil.copy(REAL / DENSE_NAME, beside)
    load_profile(profile)  # the very file: accepted


# Profiles that are not profiles ---------------------------------------------------------------


BROKEN_PROFILES = [
    ("not toml [", "not a TOML file"),
    ('kind = "something else"\nschema_version = 1\n', "not a deepep-calc calibration profile"),
    ('kind = "deepep-calc calibration profile"\nschema_version = 1\n', "schema_version 1 is not supported"),
]


@pytest.mark.parametrize(("text", "needle"), BROKEN_PROFILES)
def test_broken_profiles_are_one_line_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(FileInputError) as info:
        load_profile(path)
    assert needle in info.value.message and "bad.toml" in info.value.message
    assert "\n" not in info.value.message


def test_profile_without_fingerprint_or_with_a_bad_field(tmp_path: Path) -> None:
    rs, cells, fit = trt_set()
    text = to_toml(build_profile(rs, cells, fit, None, records(rs), "p.toml"))
    no_sha = tmp_path / "nosha.toml"
    no_sha.write_text(re.sub(r'(?m)^sha256 = ".*"\n', "", text, count=1))
    with pytest.raises(FileInputError, match=r"input 1 has no fingerprint \(sha256 missing\)"):
        load_profile(no_sha)
    bad = tmp_path / "badfield.toml"
    bad.write_text(text.replace('tag = "derived"', 'tag = "guessed"', 1))
    with pytest.raises(FileInputError, match=r"not a valid calibration profile: constants\.launch_us\.tag"):
        load_profile(bad)
    with pytest.raises(FileInputError, match="no such file"):
        load_profile(tmp_path / "missing.toml")


def test_broken_profile_is_refused_by_evaluate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    code, _, err = run(capsys, "evaluate", "--calibration", bad)
    assert code == 2 and "bad.toml: not a TOML file" in err and err.count("\n") == 1
