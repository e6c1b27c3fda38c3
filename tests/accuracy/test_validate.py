"""The accuracy report: every reference present, in sample and out of sample, with its targets.

Targets of the model (docs/model.md section 9), checked on the references each fold left out:
the DeepEP / alternative ratio of every A/B pair within 0.10 and its winner right, and the
kernel D+C MAPE at most 20 %. The ones the model meets are asserted; the ones it misses are
strict xfails that name the pairs, so a model change that meets them turns them red until the
expectation is updated (and the note in docs/model.md with it).
"""

from __future__ import annotations

import math
import re

import pytest

from deepep_calc.accuracy.validate import (
    ABRow,
    Report,
    Row,
    prediction_band,
    validate,
)
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.measured import load_cells
from deepep_calc.catalog.references import load_disagg_refs
from deepep_calc.catalog.transports import load_transports
from deepep_calc.fit.kernels import KernelRow, fit_rows, kernel_rows, nvlink_rows
from deepep_calc.fit.observations import observations, pairs
from paths import REPO


@pytest.fixture(scope="module")
def report() -> Report:
    return validate()


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


def _cross_node_refs() -> dict[str, list[KernelRow]]:
    rows = kernel_rows()
    return {name: fit_rows(t, rows) for name, t in load_transports().items() if fit_rows(t, rows)}


def test_a_transport_with_one_reference_reproduces_it_exactly(report: Report) -> None:
    """One cross-node reference pins the per-selection cost: D+C exact in sample."""
    single = {rows[0].ref.source for rows in _cross_node_refs().values() if len(rows) == 1}
    assert single  # efa-native-cqpoll and efa-pplx have one reference each
    for r in report.rows:
        if r.kind == "kernel" and r.source in single:
            assert r.error == pytest.approx(0.0, abs=1e-6), r.reference


def test_every_in_scope_cross_node_reference_is_fitted(report: Report) -> None:
    """Cross-checks are fitted too, not only the designated reference: a transport's beta rests
    on every in-scope low-latency reference it has (other harness, instance, dtype)."""
    refs = _cross_node_refs()
    assert len(refs["efa-proxy"]) == 6 and len(refs["efa-gda"]) == 10 and len(refs["ib-ibgda"]) == 4
    assert len(refs["efa-uccl"]) == 8  # the README's, [AB]'s and [A2ALL]'s five small-token pairs
    keys = {r.ref.source for rows in refs.values() for r in rows}
    for r in report.rows:
        if r.kind == "kernel" and r.source in keys:
            assert r.fitted, r.reference


@pytest.mark.slow
def test_unmeasured_transports_are_reported_apart(cv: Report) -> None:
    """Held out, a transport with one cross-node reference (or a library with one row inside a
    node) has nothing left: those rows are counted apart."""
    single = sum(len(rows) == 1 for rows in _cross_node_refs().values())
    libraries: dict[str, int] = {}
    for r in nvlink_rows(kernel_rows()):
        libraries[r.transport.library] = libraries.get(r.transport.library, 0) + 1
    single += sum(n == 1 for n in libraries.values())
    split = cv.kernel_split()
    assert split["unmeasured"]["rows"] == single
    kernel = [r for r in cv.rows if r.kind == "kernel" and r.in_scope]
    assert split["measured"]["rows"] + split["unmeasured"]["rows"] == len(kernel)
    assert {r.reference.split(" @")[0] for r in kernel if r.unmeasured} == {"efa-native-cqpoll", "efa-pplx"}


def test_nvlink_token_scaling_is_fitted_by_least_squares(report: Report) -> None:
    """Per library, two unknowns over its one-node rows at several token counts and shapes: near
    every row, exact on none (DeepEP 1.x: 17 rows, 2.x and UCCL-EP 10 each). DeepEP 1.x's rows
    come from three harnesses ([CX] graph replay on B300 and H200, [A2ALL] CUDA events, [DE]
    on H800) that put its one-token pair at 41-52 us: within 35 %, not closer."""
    by_ref = {(r.reference, r.source): r for r in report.rows if r.kind == "kernel"}
    libraries: dict[str, list] = {}
    for k in nvlink_rows(kernel_rows()):
        libraries.setdefault(k.transport.library, []).append(
            by_ref[(k.ref.describe(k.transport.name), k.ref.source)]
        )
    assert {lib: len(rows) for lib, rows in libraries.items() if len(rows) > 1} == {
        "deepep-v1": 17,
        "deepep-v2": 10,
        "uccl-ep": 10,
    }
    for lib, rows in libraries.items():
        if len(rows) > 1:
            assert all(r.fitted and abs(r.error) < 0.35 for r in rows), lib
            assert sum(abs(r.error) > 0.01 for r in rows) >= len(rows) // 2, lib


@pytest.mark.slow
def test_held_out_predictions_exist_for_every_in_scope_row(cv: Report) -> None:
    for r in cv.rows:
        if r.in_scope:
            assert r.held_out is not None and math.isfinite(r.held_out), r.reference
    assert all(a.held_out_ratio is not None for a in cv.ab)


@pytest.mark.slow
def test_held_out_accuracy_by_kind(cv: Report) -> None:
    """Regression guards at today's out-of-sample figures (docs/model.md quotes them)."""
    kinds = cv.kinds()
    assert kinds["step"]["held_out_mape"] < 0.09
    assert kinds["aggregate"]["held_out_mape"] < 0.065
    assert kinds["ttft"]["held_out_mape"] < 0.27
    assert kinds["kernel"]["held_out_mape"] < 0.20
    for kind in ("step", "aggregate", "ttft"):  # out of sample is never better than in sample here
        assert kinds[kind]["held_out_mape"] >= kinds[kind]["mape"] - 1e-9


def _by_pair(cv: Report) -> dict[str, ABRow]:
    return {a.pair: a for a in cv.ab}


TRT_PAIRS = ("trt-ab-k1-c4", "trt-ab-k8-c4", "trt-ab-k8-c32", "trt-ab-k8-c16-isl2048")


@pytest.mark.slow
def test_held_out_ratio_within_010_on_trtllm_and_sglang_pairs(cv: Report) -> None:
    """trt-ab-k1-c4 is left to the target test: its measured aggregate ratio (0.60) sits below its
    per-user ratio (0.69) because both 40-request runs include a cold start (the next test),
    which a steady-state model does not describe."""
    ab = _by_pair(cv)
    for key in (
        *TRT_PAIRS[1:],
        "sglang-deepep-vs-uccl-c32",
        "sglang-deepep-vs-uccl-c256",
        "vllm-ab-decode-c32",
    ):
        assert abs(ab[key].ratio_error) <= 0.10, (key, ab[key].held_out_ratio, ab[key].measured_ratio)
    assert abs(ab["trt-ab-k1-c4"].ratio_error) <= 0.11


@pytest.mark.slow
def test_held_out_winner_right_on_every_dense_vs_deepep_pair(cv: Report) -> None:
    """Every A/B of DeepEP against a dense alternative: the held-out call agrees (dense, tie
    counted as dense, or DeepEP), including the DeepSeek-scale A/B where DeepEP wins."""
    ab = _by_pair(cv)
    for key, a in ab.items():
        if a.labels == ("deepep", "dense"):
            assert a.agree, (key, a.measured_call, a.predicted_call)
    assert ab["u926-dsv3"].measured_call == ab["u926-dsv3"].predicted_call == "deepep"


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="known miss: docs/model.md section 9, 'Where the model misses'")
def test_target_ratio_within_010_on_every_pair(cv: Report) -> None:
    """Misses today: the single-node A/Bs of [NIXL] and [U926] held out (each leaves vLLM's AGRS
    term to the others, at another load or node count) and trt-ab-k1-c4 by 0.0005 (its measured
    aggregate carries the benchmark's cold start, which the model does not)."""
    assert all(abs(a.ratio_error) <= 0.10 for a in cv.ab)


@pytest.mark.slow
def test_target_winner_right_on_every_pair(cv: Report) -> None:
    """Issue 9's target, met: every A/B pair's held-out call agrees with the measured one."""
    assert all(a.agree for a in cv.ab), [(a.pair, a.measured_call, a.predicted_call) for a in cv.ab]


def test_trtllm_waits_for_its_proxy_on_the_host(report: Report) -> None:
    """TensorRT-LLM's DeepEP step at ISL 2048 is its step at ISL 120 (51.0 ms both): the proxied
    cost adds after the longer path (`proxy_wait = "host"`), so the GPU work of the joining
    2,048-token prompts stays hidden under the CPU path; on the GPU path it would show (+10 %)."""
    rows = {r.reference: r for r in report.rows if r.kind == "step"}
    long, short = rows["trt-ab-k8-c16-isl2048:deepep"], rows["trt-ab-k8-c4:deepep"]
    assert abs(long.error) < 0.03 and long.predicted == pytest.approx(short.predicted, rel=0.02)
    engines = load_engines()
    assert engines["trtllm"].proxy_wait == "host" and engines["vllm"].proxy_wait == "gpu"
    assert all(e.proxy_wait_source for e in engines.values())
    assert "assumed" in engines["sglang"].proxy_wait_source  # no SGLang run tells the two apart


@pytest.mark.slow
def test_vllm_comms_gain_and_ab_ratio_together(cv: Report) -> None:
    """Issue 9's check: EP_NUM_COMMS 1 -> 8 on vLLM eager halves the DeepEP step as the cells do
    (203 -> 100-106 ms) while the A/B ratio stays near the measured 0.97; the sum model (proxy
    after the longer path) gave 0.90 in sample and 0.86 held out."""
    rows = {r.reference: r for r in cv.rows if r.kind == "step"}
    for conc in (4, 8, 32):
        k1, k8 = rows[f"vllm-k1-c{conc}:deepep"], rows[f"vllm-k8-c{conc}:deepep"]
        assert k1.predicted / k8.predicted == pytest.approx(k1.measured / k8.measured, abs=0.15), conc
    ab = _by_pair(cv)["vllm-ab-decode-c32"]
    assert abs(ab.predicted_ratio - ab.measured_ratio) <= 0.03
    assert abs(ab.ratio_error) <= 0.05


@pytest.mark.slow
def test_target_kernel_held_out_mape_within_20pct(cv: Report) -> None:
    """Issue 9's target, every in-scope kernel row held out (unmeasured transports included)."""
    assert cv.kinds()["kernel"]["held_out_mape"] <= 0.20
    assert cv.kernel_split()["measured"]["held_out_mape"] <= 0.20


@pytest.mark.slow
def test_readme_quotes_the_held_out_figures(cv: Report) -> None:
    """README's accuracy table is the cross-validation's, to the printed 0.1 %."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    labels = {
        "step": "decode step (ITL / TPOT)",
        "aggregate": "aggregate tok/s",
        "ttft": "TTFT",
        "kernel": "kernel dispatch + combine",
    }
    for kind, g in cv.kinds().items():
        m = re.search(rf"^\| {re.escape(labels[kind])} \| (\d+) \| ([\d.]+) % \|$", text, re.M)
        assert m, kind
        assert int(m.group(1)) == g["held_out_rows"], kind
        assert m.group(2) == f"{g['held_out_mape'] * 100:.1f}", kind


@pytest.mark.slow
def test_every_pair_is_an_observed_a_b(cv: Report) -> None:
    assert {a.pair for a in cv.ab} == set(pairs(observations()))


@pytest.mark.slow
def test_bands_bracket_one_and_come_from_held_out_rows(cv: Report) -> None:
    """One band per kind where references cover a combination, one more per serving kind from
    the leave-a-combination-out misses (kernels have no such combination)."""
    bands = cv.bands()
    kinds = {"kernel", "step", "aggregate", "ttft", "ratio"}
    assert set(bands) == kinds | {f"{k}:uncovered" for k in kinds - {"kernel"}}
    for kind, (lo, hi) in bands.items():
        assert 0 < lo <= 1.0 <= hi, kind


@pytest.mark.slow
def test_bands_cover_at_least_80_percent_of_what_was_held_out(cv: Report) -> None:
    """Issue #25's target: each held-out figure against the band made from the others' misses
    (never its own), per kind of figure and for both evidence levels."""
    cover = cv.coverage()
    assert set(cover) == set(cv.bands())
    for band, c in cover.items():
        assert c["figures"] >= 10 and c["rate"] >= 0.80, (band, c)


@pytest.mark.slow
def test_group_cv_covers_every_engine_model_transport(cv: Report) -> None:
    by = {g.by: {name for name, _, _ in g.folds} for g in cv.group_cv}
    assert by["engine"] == {"trtllm", "vllm", "sglang"}
    assert {"qwen3-30b-a3b-fp8", "deepseek-v3"} <= by["model"]
    assert {"efa-proxy", "efa-uccl"} <= by["transport"]
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


@pytest.mark.slow
def test_the_steady_state_ratio_is_shown_beside_the_measured_one(cv: Report) -> None:
    """Validation keeps the measured ratio as the one its accuracy figures use, and shows the
    steady-state one beside it; held out, the model is within 0.10 of the steady state."""
    ab = _by_pair(cv)
    k1 = ab["trt-ab-k1-c4"]
    assert k1.steady_ratio is not None and math.isclose(k1.steady_ratio, 74.38 / 110.24)
    assert k1.ratio_error == k1.held_out_ratio - k1.measured_ratio  # the accuracy figure: as measured
    assert abs(k1.held_out_ratio - k1.steady_ratio) <= 0.10
    assert "cold start" in k1.note and "0.67" in k1.steady_line()
    assert all(a.steady_ratio is None and not a.note for a in cv.ab if a.pair != "trt-ab-k1-c4")
    assert (
        cv.to_json()["ab"][[a.pair for a in cv.ab].index("trt-ab-k1-c4")]["steady_state_ratio"]
        == k1.steady_ratio
    )


def test_the_disaggregated_rows_stay_out_of_the_other_bands(report: Report) -> None:
    ids = {r.reference for r in report.rows}
    assert not ids & set(load_disagg_refs())


# The band and the figures, on rows stated here -------------------------------------------------


def test_a_prediction_band_is_split_conformal() -> None:
    """With n misses the band runs from the floor((n + 1) x 0.1)-th to the ceil((n + 1) x 0.9)-th
    smallest: for 20 misses (logs -0.10 to 0.09 by 0.01) the 2nd and the 19th, -0.09 and 0.08;
    for 5, the smallest and the largest. Fewer than 3 give no band."""
    logs = [i / 100 - 0.10 for i in range(20)]
    band = prediction_band(logs[::-1])  # order does not matter
    assert band is not None
    low, high = band
    assert low == pytest.approx(math.exp(-0.09)) and high == pytest.approx(math.exp(0.08))
    five = [math.log(f) for f in (0.9, 1.0, 1.1, 1.2, 1.3)]
    assert prediction_band(five) == pytest.approx((0.9, 1.3))
    assert prediction_band(five[:2]) is None


def test_a_band_never_excludes_the_model_itself() -> None:
    """Misses all above 1 (1.1 to 1.5): the band starts at 1, not at 1.1."""
    band = prediction_band([math.log(f) for f in (1.1, 1.2, 1.3, 1.4, 1.5)])
    assert band is not None
    low, high = band
    assert low == 1.0 and high == pytest.approx(1.5)


def _row(kind: str, measured: float, predicted: float, held_out: float | None, in_scope: bool = True) -> Row:
    return Row(kind, f"{kind}-{measured}", "m", measured, predicted, held_out, "src", True, in_scope)


def test_accuracy_by_kind_counts_in_scope_rows_only() -> None:
    """Step rows 10 -> 11 (+10 %) and 20 -> 19 (-5 %): MAPE 7.5 %; held out 12 (+20 %) and none:
    one held-out row at 20 %. The out-of-scope row (+100 %) counts nowhere."""
    rows = [
        _row("step", 10.0, 11.0, 12.0),
        _row("step", 20.0, 19.0, None),
        _row("step", 5.0, 10.0, 10.0, in_scope=False),
    ]
    assert rows[0].error == pytest.approx(0.1) and rows[0].cv_error == pytest.approx(0.2)
    assert rows[1].cv_error is None
    kinds = Report(rows=rows).kinds()
    assert list(kinds) == ["step"]
    assert kinds["step"]["rows"] == 2 and kinds["step"]["mape"] == pytest.approx(0.075)
    assert kinds["step"]["held_out_rows"] == 1 and kinds["step"]["held_out_mape"] == pytest.approx(0.2)


def test_verdict_agreement_counts_the_pairs_whose_call_agrees() -> None:
    """One pair measured 1.10 (DeepEP) and held out 1.08 (DeepEP): agrees, off by 0.02; one
    measured 0.90 (dense) and held out 1.10 (DeepEP): disagrees, off by 0.20."""
    labels = ("deepep", "dense")
    report = Report(
        ab=[
            ABRow("a", "vllm", labels, "aggregate", 1.10, 1.09, 1.08),
            ABRow("b", "vllm", labels, "aggregate", 0.90, 0.95, 1.10),
        ]
    )
    got = report.verdict_agreement()
    assert (got["pairs"], got["agree"], got["rate"]) == (2, 1, 0.5)
    assert got["max_ratio_error"] == pytest.approx(0.20)
    assert Report().verdict_agreement()["rate"] is None
