"""AIPerf runs paired into an A/B: the tax, the ratios and their provenance, the checks that refuse
a pair of different workloads, and the runs sorted by concurrency, on the real exports.

The pairing is `fit/pairs.py`'s (it reads no file; `io/aiperf` re-exports it for the reader's
callers, and these tests call it through that re-export, as those callers do). `test_pairs.py`
beside this file pins the same functions on runs built in memory; here they take the real
exports the user's calibration runs read (`tests/calibrate/user_runs.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibrate.user_runs import EXTRA, TRT_DEEPEP, TRT_DENSE, vllm
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import AIPerfRun, check_pair, derive_pair, group_by_concurrency, load_aiperf

# --------------------------------------------------------------------------------------------
# pairs


def test_trt_conc4_pair_numbers_and_provenance() -> None:
    dense, deepep = load_aiperf(TRT_DENSE), load_aiperf(TRT_DEEPEP)
    pair = derive_pair(dense, deepep)

    assert round(pair.per_user_dense.scalar, 2) == 28.06  # type: ignore[union-attr]
    assert round(pair.per_user_deepep.scalar, 2) == 19.27  # type: ignore[union-attr]
    assert round(pair.step_ms_dense.scalar, 2) == 35.63  # 35.6347...: the facts' "35.64"
    assert abs(pair.step_ms_dense.scalar - 35.64) < 0.01
    assert round(pair.step_ms_deepep.scalar, 2) == 51.90
    assert abs(pair.tax_ms.scalar - 16.3) <= 0.05
    assert pair.tax_ms.unit == "ms"

    # imported values are measured, as exported; computed ones are derived
    for q in (
        pair.per_user_dense,
        pair.per_user_deepep,
        pair.step_ms_dense,
        pair.step_ms_deepep,
        dense.ttft_ms,
        dense.aggregate_tok_s,
        dense.isl_measured,
    ):
        assert q is not None and q.tag is Tag.MEASURED
    for q in (
        pair.tax_ms,
        pair.tax_spread_ms,
        pair.tax_from_per_user_ms,
        pair.per_user_ratio,
        pair.aggregate_ratio,
        pair.ttft_ratio,
    ):
        assert q is not None and q.tag is Tag.DERIVED

    # sources name the file and the benchmark id; the tax rests on both arms
    assert TRT_DENSE.name in pair.step_ms_dense.source
    assert "fae6e9f1f9fc" in pair.step_ms_dense.source
    assert TRT_DEEPEP.name in pair.step_ms_deepep.source
    assert "e27e731ea174" in pair.step_ms_deepep.source
    for part in (TRT_DENSE.name, TRT_DEEPEP.name, "fae6e9f1f9fc", "e27e731ea174"):
        assert part in pair.tax_ms.source

    assert 0.02 < pair.tax_spread_ms.scalar < 0.2  # type: ignore[union-attr]
    assert abs(pair.tax_from_per_user_ms.scalar - 16.27) < 0.05  # type: ignore[union-attr]
    assert abs(pair.per_user_ratio.scalar - 19.268 / 28.064) < 1e-3  # type: ignore[union-attr]
    assert abs(pair.aggregate_ratio.scalar - 64.236 / 106.358) < 1e-3  # type: ignore[union-attr]
    assert pair.ttft_basis == "p50"
    assert abs(pair.ttft_ratio.scalar - 210.9 / 116.9) < 0.01  # type: ignore[union-attr]
    assert pair.concurrency == 4
    # both runs' first waves waited for a cold start; at steady state the ratio is 74.38 / 110.24
    assert [w.split(" (")[0] for w in pair.warnings] == ["dense run", "DeepEP run"]
    assert all("cold start" in w for w in pair.warnings)
    assert pair.steady_aggregate_ratio is not None and pair.steady_aggregate_ratio.tag is Tag.DERIVED
    assert abs(pair.steady_aggregate_ratio.scalar - 74.376 / 110.236) < 1e-3


@pytest.mark.parametrize("conc", [4, 8, 32])
def test_vllm_multicomm_ratio(conc: int) -> None:
    one, eight = load_aiperf(vllm(1, conc)), load_aiperf(vllm(8, conc))
    assert one.concurrency == eight.concurrency == conc
    assert (one.comms, eight.comms) == (1, 8)
    # same workload, so a valid comparison; the only remark is that the "dense" slot holds a
    # DeepEP run, which is what this comparison deliberately does
    assert check_pair(one, eight) == ["the dense run is named 'deepep-epnc1'"]
    ratio = eight.per_user_tok_s / one.per_user_tok_s  # type: ignore[operator]
    assert ratio.tag is Tag.DERIVED
    assert 1.8 <= ratio.scalar <= 2.2


def test_group_by_concurrency() -> None:
    runs = [load_aiperf(vllm(k, c)) for k in (1, 8) for c in (32, 4, 8)]
    groups = group_by_concurrency(runs)
    assert list(groups) == [4, 8, 32]
    assert all(len(v) == 2 for v in groups.values())
    assert [r.comms for r in groups[8]] == [1, 8]


def test_mismatched_concurrency_is_an_input_error() -> None:
    with pytest.raises(InputError) as info:
        derive_pair(load_aiperf(vllm(1, 4)), load_aiperf(vllm(8, 8)))
    assert info.value.field == "concurrency"
    assert "concurrency" in info.value.message
    assert "4" in info.value.message and "8" in info.value.message
    assert "\n" not in info.value.message


def test_mismatched_model_and_lengths(tmp_path: Path) -> None:
    base = json.loads(TRT_DENSE.read_text())

    def variant(name: str, **edits: object) -> AIPerfRun:
        doc = json.loads(json.dumps(base))
        for key, value in edits.items():
            if key == "model":
                doc["input_config"]["models"]["items"][0]["name"] = value
                doc["input_config"]["tokenizer"]["name"] = value
            else:
                doc["input_config"]["datasets"][0]["prompts"][key]["mean"] = value
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return load_aiperf(path)

    dense = load_aiperf(TRT_DENSE)
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("other_model.json", model="deepseek-ai/DeepSeek-V3"))
    assert info.value.field == "model" and "DeepSeek-V3" in info.value.message
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("long_isl.json", isl=2048.0))
    assert info.value.field == "isl" and "2048" in info.value.message
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("long_osl.json", osl=256.0))
    assert info.value.field == "osl"


def test_pair_warnings_for_small_issues() -> None:
    dense = load_aiperf(TRT_DENSE)
    swapped = check_pair(load_aiperf(TRT_DEEPEP), dense)
    assert any("the dense run is named 'deepep-epnc1'" in w for w in swapped)
    cancelled = check_pair(dense, load_aiperf(EXTRA / "cancelled_run.json"))
    assert any(w.startswith("DeepEP run (cancelled_run.json)") for w in cancelled)


def test_group_by_concurrency_refuses_unknown(tmp_path: Path) -> None:
    f = tmp_path / "no_conc.json"
    f.write_text(json.dumps({"inter_token_latency": {"unit": "ms", "avg": 50.0}}))
    with pytest.raises(InputError, match="concurrency"):
        group_by_concurrency([load_aiperf(f)])
