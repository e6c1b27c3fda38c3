"""The accuracy report: every reference present, in sample and out of sample, with its targets.

Targets of the model (docs/model.md section 9), checked on the references each fold left out:
the DeepEP / alternative ratio of every A/B pair within 0.10 and its winner right, and the
kernel D+C MAPE at most 20 %. The ones the model meets are asserted; the ones it misses are
strict xfails that name the pairs, so a model change that meets them turns them red until the
expectation is updated (and the note in docs/model.md with it).
"""

from __future__ import annotations

import json
import math

import pytest

from deepep_calc.catalog.measured import load_cells
from deepep_calc.catalog.transports import load_transports
from deepep_calc.cli import main
from deepep_calc.fit.observations import observations, pairs
from deepep_calc.whatif.validate import ABRow, Report, cross_validate, render_markdown, validate


@pytest.fixture(scope="module")
def report() -> Report:
    return validate()


@pytest.fixture(scope="module")
def cv() -> Report:
    return cross_validate()


def test_every_kernel_reference_appears_once(report: Report) -> None:
    rows = [r for r in report.rows if r.kind == "kernel"]
    expected = sum(len(t.references()) for t in load_transports().values())
    assert len(rows) == expected
    sources = [r.source for r in rows]
    for t in load_transports().values():
        for ref in t.references():
            assert ref.source in sources, (t.name, ref.source)


def test_every_serving_observation_appears(report: Report) -> None:
    serving = [r for r in report.rows if r.kind != "kernel"]
    ids = {r.reference for r in serving}
    assert ids == {o.id for o in observations()}
    # the reference-only cell (no published shape) is not an observation
    assert "vllm-ab-prefill-c64" in load_cells() and not any(i.startswith("vllm-ab-prefill") for i in ids)


def test_efa_fit_rows_are_reproduced_by_their_beta(report: Report) -> None:
    """Each cross-node transport's fit row pins its per-selection cost: D+C exact in sample."""
    for r in report.rows:
        if r.kind == "kernel" and r.fitted and "EP8" not in r.reference:
            assert r.error == pytest.approx(0.0, abs=1e-9), r.reference


def test_nvlink_token_scaling_is_fitted_by_least_squares(report: Report) -> None:
    """Two unknowns, five rows at T = 1 and 256: near every row, exact on none."""
    rows = [r for r in report.rows if r.kind == "kernel" and r.reference.startswith("nvlink") and r.fitted]
    assert len(rows) == 5
    assert all(abs(r.error) < 0.10 for r in rows)
    assert sum(abs(r.error) > 0.01 for r in rows) >= 4


def test_held_out_predictions_exist_for_every_in_scope_row(cv: Report) -> None:
    for r in cv.rows:
        if r.in_scope:
            assert r.held_out is not None and math.isfinite(r.held_out), r.reference
    assert all(a.held_out_ratio is not None for a in cv.ab)


def test_held_out_accuracy_by_kind(cv: Report) -> None:
    """Regression guards at today's out-of-sample figures (docs/model.md quotes them)."""
    kinds = cv.kinds()
    assert kinds["step"]["held_out_mape"] < 0.12
    assert kinds["aggregate"]["held_out_mape"] < 0.10
    assert kinds["ttft"]["held_out_mape"] < 0.35
    assert kinds["kernel"]["held_out_mape"] < 0.26
    for kind in ("step", "aggregate", "ttft"):  # out of sample is never better than in sample here
        assert kinds[kind]["held_out_mape"] >= kinds[kind]["mape"] - 1e-9


def _by_pair(cv: Report) -> dict[str, ABRow]:
    return {a.pair: a for a in cv.ab}


TRT_PAIRS = ("trt-ab-k1-c4", "trt-ab-k8-c4", "trt-ab-k8-c32", "trt-ab-k8-c16-isl2048")


def test_held_out_ratio_within_010_on_trtllm_and_sglang_pairs(cv: Report) -> None:
    """trt-ab-k1-c4 is left to the target test: its measured aggregate ratio (0.60) sits below its
    per-user ratio (0.69) by the benchmark's ramp and tail, which the model does not describe."""
    ab = _by_pair(cv)
    for key in (*TRT_PAIRS[1:], "sglang-deepep-vs-uccl-c32", "sglang-deepep-vs-uccl-c256"):
        assert abs(ab[key].ratio_error) <= 0.10, (key, ab[key].held_out_ratio, ab[key].measured_ratio)
    assert abs(ab["trt-ab-k1-c4"].ratio_error) <= 0.11


def test_held_out_winner_right_on_every_dense_vs_deepep_pair(cv: Report) -> None:
    """Every A/B of DeepEP against a dense alternative: the held-out call agrees (dense, tie
    counted as dense, or DeepEP), including the DeepSeek-scale A/B where DeepEP wins."""
    ab = _by_pair(cv)
    for key, a in ab.items():
        if a.labels == ("deepep", "dense"):
            assert a.agree, (key, a.measured_call, a.predicted_call)
    assert ab["u926-dsv3"].measured_call == ab["u926-dsv3"].predicted_call == "deepep"


@pytest.mark.xfail(strict=True, reason="known miss: docs/model.md section 9, 'Where the model misses'")
def test_target_ratio_within_010_on_every_pair(cv: Report) -> None:
    """Misses today: the single-node NVLink A/Bs of [NIXL] (allgather's gap over EP does not grow
    with load in the model), [U926] held out (no other cross-node dense graph-mode run pins the
    EFA collective step) and the vLLM A/B (the proxied cost falls as 1 / EP_NUM_COMMS in the
    model, faster in the cells)."""
    assert all(abs(a.ratio_error) <= 0.10 for a in cv.ab)


@pytest.mark.xfail(strict=True, reason="known miss: DeepEP-V2 vs UCCL at c256 is called a tie by 0.2 %")
def test_target_winner_right_on_every_pair(cv: Report) -> None:
    assert all(a.agree for a in cv.ab)


@pytest.mark.xfail(strict=True, reason="known miss: campaigns of one transport disagree by up to 2x")
def test_target_kernel_held_out_mape_within_20pct(cv: Report) -> None:
    assert cv.kinds()["kernel"]["held_out_mape"] <= 0.20


def test_every_pair_is_an_observed_a_b(cv: Report) -> None:
    assert {a.pair for a in cv.ab} == set(pairs(observations()))


def test_bands_bracket_one_and_come_from_held_out_rows(cv: Report) -> None:
    bands = cv.bands()
    assert set(bands) == {"kernel", "step", "aggregate", "ttft", "ratio"}
    for kind, (lo, hi) in bands.items():
        assert 0 < lo <= 1.0 <= hi, kind


def test_group_cv_covers_every_engine_model_transport(cv: Report) -> None:
    by = {g.by: {name for name, _, _ in g.folds} for g in cv.group_cv}
    assert by["engine"] == {"trtllm", "vllm", "sglang"}
    assert {"qwen3-30b-a3b-fp8", "deepseek-v3"} <= by["model"]
    assert {"efa-proxy", "efa-uccl", "nvlink"} <= by["transport"]
    assert {"p5", "p6-b200"} <= by["instance"]


def test_call_uses_the_noise_band() -> None:
    labels = ("deepep", "dense")
    assert ABRow.call(1.06, labels) == "deepep"
    assert ABRow.call(1.04, labels) == "tie"
    assert ABRow.call(0.94, labels) == "dense"
    tie_vs_dense = ABRow("x", "vllm", labels, "aggregate", 0.97, 0.97, 0.90)
    assert tie_vs_dense.measured_call == "tie" and tie_vs_dense.predicted_call == "dense"
    assert tie_vs_dense.agree  # a tie counts against DeepEP, as the verdict rules
    assert tie_vs_dense.ratio_error == pytest.approx(-0.07)


def test_markdown_is_deterministic_and_complete(cv: Report) -> None:
    a, b = render_markdown(cv), render_markdown(cv)
    assert a == b
    for heading in ("Accuracy by kind", "Bands", "Leave a group out", "A/B pairs", "Kernels", "Not compared"):
        assert heading in a


def test_cli_validate_cv_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--cv", "--json"])  # returns normally on success (errors exit 2)
    out = json.loads(capsys.readouterr().out)
    assert out["cross_validated"] is True
    assert {"kinds", "verdict_agreement", "bands", "group_cv", "rows", "ab", "not_compared"} <= set(out)
    assert out["verdict_agreement"]["pairs"] == len(pairs(observations()))
