"""The calibration summary (`calibrate/summary.py`): what `calibrate --json` prints and the
terminal view draws, each number with its unit, tag and source, built from the profile as the
reader parsed it back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.calibrate.fit import fit_engine
from deepep_calc.calibrate.profile import build_profile, serialise
from deepep_calc.calibrate.runs import assemble, build_cells
from deepep_calc.calibrate.summary import PAIR_RATIOS, summarise
from deepep_calc.fit.profile_records import CONSTANTS
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.question.scenario import Scenario

from .user_runs import EXTRA, PREFIX, REAL, TRT_DEEPEP, TRT_DENSE, records, run, run_json, trt_set


def _summary_of(rs: Any, cells: list, fit: Any) -> dict[str, Any]:
    """The summary of the profile these runs give, as `calibrate` makes it: from the text read back."""
    _, written = serialise(build_profile(rs, cells, fit, None, records(rs), "mine.toml"), "mine.toml")
    return summarise(written, "out/mine.toml")


def test_the_summary_holds_every_part_of_the_profile() -> None:
    rs, cells, fit = trt_set()
    s = _summary_of(rs, cells, fit)
    assert list(s) == [
        "profile", "scenario", "inputs", "measured", "derived", "fitted", "kernel", "residuals", "warnings"
    ]  # fmt: skip
    assert s["profile"] == "out/mine.toml"
    assert s["scenario"]["engine"] == "trtllm" and "calibration" not in s["scenario"]  # None left out
    assert [i["role"] for i in s["inputs"]] == ["dense", "deepep"]
    assert s["kernel"] is None  # no kernel log
    assert len(s["residuals"]) == len(fit.residuals) and s["warnings"] == rs.warnings


def test_a_fitted_constant_shows_the_builtin_value_it_replaces() -> None:
    """Every constant of the profile, with its source prefixed by the profile's name."""
    rs, cells, fit = trt_set()
    fitted = _summary_of(rs, cells, fit)["fitted"]
    assert list(fitted) == list(CONSTANTS)
    for name, c in fit.constants.items():
        assert fitted[name]["value"] == c.q.scalar and fitted[name]["builtin"] == c.builtin.scalar
        assert fitted[name]["unit"] == c.q.unit and fitted[name]["source"].startswith("profile mine.toml: ")
    assert fitted["launch_us"]["tag"] == "derived" and fitted["step_us"]["tag"] == "assumed"


def test_a_pair_shows_its_tax_and_every_ratio() -> None:
    rs, cells, fit = trt_set()
    (pair,) = _summary_of(rs, cells, fit)["derived"]["pairs"]
    assert set(pair) == {"cell", "tax_ms", "tax_spread_ms", *PAIR_RATIOS}
    assert pair["cell"] == "your-c4-k1"
    assert pair["tax_ms"]["value"] == pytest.approx(rs.pairs[(4, 1)].tax_ms.scalar)
    assert all(pair[k]["tag"] == "derived" for k in ("tax_ms", *PAIR_RATIOS))


def test_a_dense_run_shared_by_two_cells_is_one_row() -> None:
    """Dense c4 is the twin of DeepEP k1 and of the shim run (comms assumed 8): three runs, three
    rows, the dense one once and without comms."""
    shim = REAL / f"trtllm-0.21_{PREFIX}_deepep-shim_c4_isl120.json"
    rs = assemble([load_aiperf(TRT_DENSE)], [load_aiperf(TRT_DEEPEP), load_aiperf(shim)], Scenario())
    cells = build_cells(rs)
    rows = _summary_of(rs, cells, fit_engine(rs.scenario, cells))["measured"]
    assert [(r["cell"], r["arm"], r["comms"]) for r in rows] == [
        ("your-c4-k1", "DeepEP", 1),
        ("your-c4-k1", "dense", None),
        ("your-c4-k8", "DeepEP", 8),
    ]
    dense = rows[1]["itl_ms"]
    assert dense["value"] == pytest.approx(35.6347, abs=1e-4) and dense["unit"] == "ms"


def test_trt_pair_summary_figures_and_tags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    s = run_json(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", out)
    assert out.is_file()
    rows = {row["arm"]: row for row in s["measured"]}
    dense, deepep = rows["dense"], rows["DeepEP"]
    assert round(dense["per_user_tok_s"]["value"], 2) == 28.06
    assert round(deepep["per_user_tok_s"]["value"], 2) == 19.27
    assert abs(dense["itl_ms"]["value"] - 35.64) < 0.01
    assert round(deepep["itl_ms"]["value"], 2) == 51.90
    for row in (dense, deepep):
        for metric in ("per_user_tok_s", "itl_ms", "ttft_p50_ms", "aggregate_tok_s"):
            assert row[metric]["tag"] == "measured"
    assert "fae6e9f1f9fc" in dense["itl_ms"]["source"] and TRT_DENSE.name in dense["itl_ms"]["source"]
    (pair,) = s["derived"]["pairs"]
    assert abs(pair["tax_ms"]["value"] - 16.3) < 0.05 and pair["tax_ms"]["tag"] == "derived"
    assert 0.0 < pair["tax_spread_ms"]["value"] < 0.2
    assert {pair[k]["tag"] for k in ("per_user_ratio", "aggregate_ratio", "ttft_ratio")} == {"derived"}
    fitted = s["fitted"]
    assert fitted["launch_us"]["tag"] == "derived"
    assert fitted["proxy_fixed_us"]["tag"] == "derived"
    assert fitted["proxy_lane_us"]["tag"] == "assumed"
    assert fitted["proxy_lane_us"]["value"] == fitted["proxy_lane_us"]["builtin"]
    assert {i["role"] for i in s["inputs"]} == {"dense", "deepep"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", i["sha256"]) for i in s["inputs"])
    # the one doubt: both runs' first waves waited for a cold start, left out at steady state
    assert len(s["warnings"]) == 2 and all("cold start" in w for w in s["warnings"])
    steady = pair["steady_aggregate_ratio"]
    assert steady["tag"] == "derived" and abs(steady["value"] - 0.675) < 0.001
    assert steady["value"] > pair["aggregate_ratio"]["value"]


@pytest.mark.parametrize(
    ("dense", "needle"),
    [
        ("cancelled_run.json", "was cancelled"),
        ("error_requests.json", "3 of 40 requests failed"),
        ("unknown_schema.json", "unknown schema_version '9.9'"),
        ("short_osl.json", "measured output length 96.0 differs"),
    ],
)
def test_suspect_runs_import_with_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, dense: str, needle: str
) -> None:
    out = tmp_path / "p.toml"
    code, stdout, err = run(
        capsys, "calibrate", "--dense", EXTRA / dense, "--deepep", TRT_DEEPEP, "-o", out, "--json"
    )
    assert code == 0, err
    s = json.loads(stdout)
    assert any(needle in w for w in s["warnings"])
    assert any(line.startswith("deepep-calc: warning: ") and needle in line for line in err.splitlines())
    assert out.is_file()
    code, stdout, _ = run(
        capsys, "calibrate", "--dense", EXTRA / dense, "--deepep", TRT_DEEPEP, "-o", out, "--force"
    )
    assert code == 0 and "Warnings" in stdout and needle in " ".join(stdout.split())
