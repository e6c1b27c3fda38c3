"""Sweeps over mixed grids (issue 13, item 5) and their checks before work (issue 12, item 3),
in `whatif/sweep/grid.py`.

A combination invalid by construction is skipped and counted, written with its reason under
--keep-invalid; a value no combination can use is refused before any work; the row limit counts
valid rows. The writers' own tests (the fallback writer's text, file modes) are in
tests/io/test_sweep_table.py.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.cli import main
from deepep_calc.io import sweep_table as sweep_output
from deepep_calc.io.inputs import resolve_files
from deepep_calc.io.profile import load_profile
from deepep_calc.io.sweep_table import columns
from deepep_calc.question.scenario import Resolved, Scenario, resolve
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import sweep_grid
from deepep_calc.whatif.sweep.run import sweep
from paths import FIXTURES
from sweep_rows import no_work, run_sweep

from .mixed import MIXED


@pytest.fixture(scope="module")
def mixed() -> Any:
    return sweep_grid(MIXED)


def test_mixed_grid_skips_what_cannot_run(mixed: Any) -> None:
    assert len(mixed.combinations) + len(mixed.skipped) == 2 * 3 * 2
    assert mixed.skipped, "efa-gda on p5 is skipped, not refused"
    assert all(c.fields["instance"] == "p5" and c.fields["transport"] == "efa-gda" for c in mixed.skipped)
    assert mixed.rows == len(mixed.combinations) * 4
    assert mixed.skipped_rows == len(mixed.skipped) * 4
    reasons = mixed.skipped_reasons()
    assert sum(reasons.values()) == len(mixed.skipped)
    assert all(r.startswith("--transport efa-gda: needs") and "p5" in r for r in reasons)


@pytest.mark.parametrize("arrow", [True, False])
def test_keep_invalid_writes_the_reason(
    arrow: bool, mixed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not arrow:
        monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    target = tmp_path / "rows.csv"
    summary = run_sweep(mixed, output=str(target), keep_invalid=True, chunk_rows=3)
    assert summary.skipped_combinations == 2 and summary.kept_invalid
    with open(target, newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == [name for name, _ in columns(keep_invalid=True)]
        rows = list(reader)
    assert len(rows) == mixed.rows + mixed.skipped_rows
    bad = [r for r in rows if r["skipped_reason"]]
    good = [r for r in rows if not r["skipped_reason"]]
    assert len(bad) == mixed.skipped_rows and len(good) == mixed.rows
    for r in bad:
        assert (r["instance"], r["transport"]) == ("p5", "efa-gda")
        assert r["nodes"] in ("2", "4") and r["concurrency"] in ("8", "64")
        assert r["deepep_per_user_tok_s"] == r["verdict"] == r["ratio_deepep_vs_alternative"] == ""
    assert all(r["verdict"] in ("dense", "deepep", "capacity") for r in good)


def test_keep_invalid_parquet_has_nulls(mixed: Any, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "rows.parquet"
    run_sweep(mixed, output=str(target), keep_invalid=True)
    table = pq.read_table(target).to_pylist()
    bad = [r for r in table if r["skipped_reason"] is not None]
    assert len(bad) == mixed.skipped_rows
    assert all(r["deepep_step_ms"] is None and r["verdict"] is None for r in bad)
    assert all(r["deepep_step_ms"] is not None for r in table if r["skipped_reason"] is None)


def test_without_keep_invalid_no_reason_column(mixed: Any, tmp_path: Path) -> None:
    target = tmp_path / "rows.csv"
    run_sweep(mixed, output=str(target))
    with open(target, newline="") as fh:
        header = next(csv.reader(fh))
    assert "skipped_reason" not in header and header == [n for n, _ in columns()]


@pytest.mark.parametrize(
    ("spec", "flag"),
    [
        ({"instance": "p5", "transport": "efa-proxy,efa-gda"}, "--transport"),  # efa-gda: nowhere here
        ({"instance": "p5,p7", "transport": "efa-proxy"}, "--instance"),  # p7: no such instance
        ({"instance": "p5", "transport": "efa-gda"}, "--transport"),  # the whole grid
    ],
)
def test_values_invalid_everywhere_are_refused(
    spec: dict[str, str], flag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", no_work)
    with pytest.raises(InputError) as exc:
        sweep_grid(spec)
    assert exc.value.field == flag


def test_files_enter_a_grid_only_through_the_resolver_it_is_given() -> None:
    """The grid reads no file: a config.json path is an unknown model to the catalog alone;
    the face's resolver (`io.inputs.resolve_files`) reads it per combination, where `resolve`
    checks the model, so a bad instance beside a missing file is still the error."""
    path = str(FIXTURES / "hf" / "dbrx" / "config.json")
    spec = {"model": f"qwen3-30b-a3b-fp8,{path}", "nodes": "1,2"}
    with pytest.raises(InputError) as refused:
        sweep_grid(spec)
    assert refused.value.field == "--model" and refused.value.value == path
    asked: list[str] = []

    def reading(s: Scenario) -> Resolved:
        asked.append(s.model)
        return resolve_files(s)

    grid = sweep_grid(spec, resolve=reading)
    assert asked == ["qwen3-30b-a3b-fp8", path]  # once per combination
    assert [c.resolved.model.name for c in grid.combinations] == [
        resolve(Scenario(model="qwen3-30b-a3b-fp8")).model.name,
        resolve_files(Scenario(model=path)).model.name,
    ]
    assert sweep(spec, resolve=resolve_files).rows == grid.rows == 4  # grid and run in one call
    missing = str(FIXTURES / "hf" / "nope" / "config.json")
    with pytest.raises(InputError) as refused:
        sweep_grid({"model": missing, "instance": "bogus"}, resolve=resolve_files)
    assert refused.value.field == "--instance"


def test_a_profile_is_read_as_its_rows_are_computed(tmp_path: Path) -> None:
    """`read_profile` reads a combination's profile only when its rows are computed: a missing
    one does not make its combinations invalid (efa-gda on p5 is refused for itself, p5en runs)
    and is reported after the output target is checked, as it always was."""
    missing = str(tmp_path / "missing.toml")
    with pytest.raises(InputError) as refused:
        sweep_grid(
            {"calibration": missing, "instance": "p5,p5en", "transport": "efa-gda"}, read_profile=load_profile
        )
    assert refused.value.field == "--transport"
    read: list[str] = []

    def reading(path: str) -> Any:
        read.append(path)
        return load_profile(path)

    grid = sweep_grid({"calibration": missing, "nodes": "1,2"}, read_profile=reading)
    assert len(grid.combinations) == 1 and read == []  # parsed, nothing read
    with pytest.raises(CalcError, match="directory does not exist"):
        run_sweep(grid, output=str(tmp_path / "no" / "rows.csv"))
    assert read == []
    with pytest.raises(CalcError, match="no such file"):
        run_sweep(grid, output=str(tmp_path / "rows.csv"))
    assert read == [missing] and list(tmp_path.iterdir()) == []  # read once; nothing written


def test_cli_refusal_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--instance", "p5", "--transport", "efa-proxy,efa-gda", "-o", str(tmp_path / "r.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("deepep-calc: error: --transport: 'efa-gda' is not allowed")
    assert "p5" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_row_limit_counts_valid_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"instance": "p5,p5en", "transport": "efa-proxy,efa-gda", "concurrency": "1:4"}
    monkeypatch.setattr(sweep_mod, "MAX_ROWS", 12)  # 3 valid combinations x 4 rows; 16 with p5 + efa-gda
    assert sweep_grid(spec).rows == 12
    monkeypatch.setattr(sweep_mod, "MAX_ROWS", 11)
    with pytest.raises(InputError, match="12 rows"):
        sweep_grid(spec)


def test_eager_and_cuda_graphs_lists_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sweep_grid({"eager": "true"}).axes["cuda_graphs"] == [False]
    assert sweep_grid({"eager": "false,true"}).axes["cuda_graphs"] == [True, False]
    with pytest.raises(InputError, match="--eager"):
        sweep_grid({"eager": "true", "cuda_graphs": "true"})
