"""`whatif/sensitivity.py`: the what-ifs on assumed constants (every one with a spread, at both
ends), the tornado built on them and the words it adds to a verdict. A changed constant as a
value is `tests/catalog/test_constants.py`'s, the refit under it `tests/fit/test_build.py`'s and
`test_kernels.py`'s, an evaluation under it `tests/estimate/test_compute.py`'s."""

from __future__ import annotations

import json

import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.constants import CATALOG, load_constants
from deepep_calc.cli import main
from deepep_calc.decide.verdict import classify
from deepep_calc.estimate.compute import compute
from deepep_calc.fit.build import built_in_table
from deepep_calc.io.inputs import resolve_files
from deepep_calc.question.scenario import Resolved, Scenario, resolve
from deepep_calc.whatif.sensitivity import Case, Row, annotate, cases, fragility, model_ratio, sensitivity
from paths import FIXTURES

# DeepSeek-V3 on 2x p5en, vLLM graphs, UCCL-EP, 9 requests of 2,048 / 256 tokens: DeepEP beats
# single-node replicas by a few percent, so an assumption at one end of its spread moves it
# across the noise band.
NEAR_THRESHOLD = Scenario(
    model="deepseek-v3",
    nodes=2,
    transport="efa-uccl",
    engine="vllm",
    cuda_graphs=True,
    concurrency=1080,
    isl=128,
    osl=1024,
)  # DeepEP 1.054x the TP replicas, just past the 1.05x threshold


def test_cases_cover_every_assumed_constant_with_a_spread() -> None:
    keys = {c.key for c in cases(resolve(NEAR_THRESHOLD))}
    wanted = {n for n, c in load_constants().items() if c.spread > 0 and c.tag == "assumed"}
    assert wanted <= keys
    assert "transport:efa-uccl:wire_efficiency" in keys
    assert "noise_band" not in keys  # derived, no spread: not an assumption to vary
    assert "transport:efa-proxy:wire_efficiency" not in {
        c.key for c in cases(resolve(Scenario()))
    }  # measured curve


def test_the_wire_case_counts_the_nodes_as_asked() -> None:
    """A disaggregated `--nodes 1` question runs on P + D nodes; `deepep-calc sensitivity`
    counts the nodes it was given (one: no wire case), `evaluate --sensitivity` the resolved
    ones, as each always has."""
    asked = Scenario(nodes=1, prefill_nodes=1, decode_nodes=1, transport="efa-uccl")
    r = resolve(asked)
    assert r.scenario.nodes == 2
    assert "transport:efa-uccl:wire_efficiency" in {c.key for c in cases(r)}
    assert "transport:efa-uccl:wire_efficiency" not in {c.key for c in cases(r, asked)}


def test_a_config_json_is_read_by_the_faces_resolver_only() -> None:
    """The tornado reads no file: a config.json path is an unknown model to the catalog alone,
    and the face's resolver (`io.inputs.resolve_files`) reads it once for every case."""
    path = str(FIXTURES / "hf" / "deepseek-v3" / "config.json")
    with pytest.raises(InputError) as refused:
        sensitivity(Scenario(model=path, nodes=2))
    assert refused.value.field == "--model"
    r = resolve_files(Scenario(model=path, nodes=2))
    preset = resolve(Scenario(model="deepseek-v3", nodes=2))
    assert {c.key for c in cases(r)} == {c.key for c in cases(preset)}


@pytest.mark.slow  # a tornado: every assumed constant refitted both ways
def test_tornado_rows_match_direct_evaluation() -> None:
    resolved: list[Scenario] = []

    def counting(s: Scenario) -> Resolved:
        resolved.append(s)
        return resolve(s)

    rows = sensitivity(NEAR_THRESHOLD, resolve=counting)
    assert resolved == [NEAR_THRESHOLD]  # resolved once: every case is `Resolved.assume`
    assert rows[0].base_verdict == evaluate(NEAR_THRESHOLD).verdict.code == "deepep"
    flipped = [r for r in rows if not r.survives]
    assert flipped, "this scenario sits near the noise band: some assumption must flip it"
    row = flipped[0]
    value, code = row.flips()[0]
    direct, _ = classify(
        compute(resolve(NEAR_THRESHOLD), table=built_in_table(CATALOG.with_values({row.case.key: value})))
    )
    assert direct == code
    symbol = {"dense": "■", "deepep": "▲", "capacity": "◆"}[code]
    assert fragility(rows).startswith(f"fragile: flips to {symbol} {code} if {row.case.label} is {value:g}")
    # survivors first sorted after flips, and flips ordered by swing
    assert [r.survives for r in rows] == sorted(r.survives for r in rows)


@pytest.mark.slow  # a tornado: every assumed constant refitted both ways
def test_calibration_scenario_is_robust() -> None:
    rows = sensitivity(resolve(Scenario()))  # a question the face resolved
    assert all(r.survives for r in rows)
    assert fragility(rows).startswith("robust")
    for r in rows:
        assert r.ratio_low.tag is Tag.ASSUMED  # a what-if value is an assumption


@pytest.mark.slow  # a tornado: every assumed constant refitted both ways
def test_evaluate_sensitivity_flag(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "evaluate",
            "--model",
            "deepseek-v3",
            "--nodes",
            "2",
            "--transport",
            "efa-uccl",
            "--engine",
            "vllm",
            "--cuda-graphs",
            "--concurrency",
            "1080",
            "--isl",
            "128",
            "--osl",
            "1024",
            "--sensitivity",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert "constants: fragile" in out["verdict"]["robustness"]
    assert {row["input"] for row in out["sensitivity"]} >= {"hbm_efficiency", "efa_one_way_us"}
    assert evaluate(NEAR_THRESHOLD).verdict.robustness.count("constants:") == 0  # evaluate() untouched


@pytest.mark.slow  # a tornado: every assumed constant refitted both ways
def test_cli_sensitivity_text(capsys: pytest.CaptureFixture[str]) -> None:
    main(["sensitivity"])
    out = capsys.readouterr().out
    assert "hbm_efficiency" in out and "Verdict is robust" in out


def _row(key: str, low: str, high: str, ratio_low: float, ratio_high: float) -> Row:
    """A tornado row by hand: `key` at 0.5 ± 0.2 (0.3 and 0.7), base verdict deepep at 1.06."""
    case = Case(key, key, Q.assumed(0.5, "1", "catalog"), 0.2, 0.3, 0.7)
    ratio = Q.assumed(1.06, "x", "model")
    lo, hi = Q.assumed(ratio_low, "x", "model"), Q.assumed(ratio_high, "x", "model")
    return Row(case, "deepep", ratio, lo, hi, low, high)


def test_a_row_survives_only_when_both_ends_keep_the_verdict() -> None:
    """Swing is |high - low| of the ratio: 1.10 - 0.98 = 0.12. The low end flips to dense."""
    row = _row("hbm_efficiency", "dense", "deepep", 0.98, 1.10)
    assert not row.survives and row.swing == pytest.approx(0.12)
    assert row.flips() == [(0.3, "dense")]
    both = _row("hbm_efficiency", "dense", "capacity", 0.9, 0.9)
    assert both.flips() == [(0.3, "dense"), (0.7, "capacity")] and both.swing == 0.0
    kept = _row("compute_efficiency", "deepep", "deepep", 1.05, 1.08)
    assert kept.survives and kept.flips() == []
    doc = row.to_json()
    assert (doc["input"], doc["low"], doc["high"], doc["spread"]) == ("hbm_efficiency", 0.3, 0.7, 0.2)
    assert doc["survives"] is False and doc["versus"] == ["deepep", "allgather"]
    assert doc["swing"] == pytest.approx(0.12)
    json.dumps(doc, allow_nan=False)


def test_fragility_names_the_first_row_that_flips_and_annotate_appends_it() -> None:
    rows = [
        _row("compute_efficiency", "deepep", "deepep", 1.05, 1.08),
        _row("hbm_efficiency", "deepep", "dense", 1.07, 1.01),
    ]
    line = fragility(rows)
    assert line == "fragile: flips to ■ dense if hbm_efficiency is 0.7 (assumed 0.5 ± 0.2)"
    assert fragility(rows[:1]).startswith("robust: no assumed constant")
    result = evaluate(Scenario())
    before = result.verdict.robustness
    annotate(result, rows)
    assert result.verdict.robustness == f"{before}; constants: {line}"


def test_the_ratio_is_the_models_of_the_two_arms_named() -> None:
    """At the default scenario both compared arms are measured cells; the ratio read here is the
    model's aggregates, before the cells stand in."""
    result = compute(resolve(Scenario()))
    assert result.arms["deepep"].measured_cell is not None
    dee, alt = result.arms["deepep"], result.arms["allgather"]
    ratio = model_ratio(result)
    want = dee.model_aggregate_tok_s.scalar / alt.model_aggregate_tok_s.scalar
    assert ratio.scalar == pytest.approx(want, rel=1e-12) and ratio.unit == "x"
    replica = model_ratio(result, ("deepep", "replica"))
    assert replica.scalar == pytest.approx(
        dee.model_aggregate_tok_s.scalar / result.arms["replica"].model_aggregate_tok_s.scalar, rel=1e-12
    )
