"""A result's single-change what-ifs (`whatif/memo.py`): each computed once and kept on the result,
a change only DeepEP reads recomputing the DeepEP arm alone and taking the other arms as they are.

The scenario is the default one at EP_NUM_COMMS=2, so `--comms 8` (a knob only DeepEP reads)
lands on the measured k8-c32 cell: the reused path must give the figures a fresh `compute` of
the changed scenario gives.
"""

from __future__ import annotations

import pytest

from deepep_calc.decide.answer import decide_resolved
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import Result
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif import memo

ASKED = Scenario(comms=2)


@pytest.fixture
def result() -> Result:
    """A fresh decided result (no what-if kept yet) for each test: the memo is per result."""
    return decide_resolved(resolve(ASKED))


@pytest.mark.parametrize(
    ("field", "value"), [("transport", "efa-gda"), ("comms", 8), ("max_qps", 8)], ids=lambda v: str(v)
)
def test_no_arm_but_deepep_reads_a_deepep_only_knob(field: str, value: object) -> None:
    """The premise of the reuse: computed afresh, a change of each knob in `DEEPEP_ONLY` leaves
    every other arm's figures where they were."""
    assert field in memo.DEEPEP_ONLY
    base = compute(resolve(ASKED))
    changed = compute(resolve(ASKED.copy(**{field: value})))
    for name in base.arms:
        if name != "deepep":
            assert changed.arms[name].step_ms == base.arms[name].step_ms, name
            assert changed.arms[name].aggregate_tok_s == base.arms[name].aggregate_tok_s, name


def test_a_deepep_only_change_is_computed_once_and_reuses_the_other_arms(result: Result) -> None:
    changed = memo.whatif(result, {"comms": 8})
    assert memo.whatif(result, {"comms": 8}) is changed  # kept, not recomputed
    assert result.whatifs[(("comms", 8),)] is changed
    for name, arm in result.arms.items():
        if name != "deepep":
            assert changed.arms[name] is arm  # taken as they are
    fresh = compute(resolve(ASKED.copy(comms=8)))
    assert changed.arms["deepep"].step_ms == fresh.arms["deepep"].step_ms
    assert changed.arms["deepep"].measured_cell == fresh.arms["deepep"].measured_cell == "trt-ab-k8-c32"
    assert changed.arms["deepep"].step_ms != result.arms["deepep"].step_ms  # the change moved it


def test_any_other_change_is_a_whole_what_if_kept_beside_them(result: Result) -> None:
    changed = memo.whatif(result, {"concurrency": 64})
    assert memo.whatif(result, {"concurrency": 64}) is changed
    assert changed.scenario.concurrency == 64
    assert changed.arms["allgather"] is not result.arms["allgather"]  # every arm recomputed
    fresh = compute(resolve(ASKED.copy(concurrency=64)))
    assert changed.arms["allgather"].step_ms == fresh.arms["allgather"].step_ms


def test_the_deepep_whatif_is_the_kept_what_ifs_deepep_arm(result: Result) -> None:
    arm = memo.deepep_whatif(result, {"comms": 8})
    assert arm is memo.whatif(result, {"comms": 8}).arms["deepep"]
    assert list(result.whatifs) == [(("comms", 8),)]  # one what-if, asked twice


def test_the_plain_path_recomputes_every_arm_each_time(
    result: Result, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `REUSE_OTHER_ARMS` off a DeepEP-only what-if is a fresh `compute`, kept nowhere."""
    monkeypatch.setattr(memo, "REUSE_OTHER_ARMS", False)
    first = memo.whatif(result, {"comms": 8})
    assert memo.whatif(result, {"comms": 8}) is not first
    assert result.whatifs == {}
    assert first.arms["allgather"] is not result.arms["allgather"]
    assert first.arms["deepep"].step_ms == compute(resolve(ASKED.copy(comms=8))).arms["deepep"].step_ms


def test_a_graph_mode_bound_mover_with_numpy_is_the_deepep_arm_alone_kept_apart(
    result: Result, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph mode moves neither DeepEP's layout nor its device times: with NumPy loaded the
    DeepEP arm alone is recomputed, kept under its own key so no reader takes it for a whole
    what-if; its DeepEP figures are the whole what-if's."""
    monkeypatch.setattr(memo, "loaded", lambda: True)
    moved = memo.deepep_arm_whatif(result, {"cuda_graphs": True})
    assert result.whatifs == {("deepep arm", ("cuda_graphs", True)): moved}
    assert moved.arms["allgather"] is result.arms["allgather"]
    whole = compute(resolve(ASKED.copy(cuda_graphs=True)))
    assert moved.arms["deepep"].step_ms == whole.arms["deepep"].step_ms
    assert memo.deepep_arm_whatif(result, {"cuda_graphs": True}) is moved


def test_a_bound_mover_takes_a_whole_what_if_when_one_is_kept_or_numpy_is_not_loaded(
    result: Result, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = memo.whatif(result, {"cuda_graphs": True})
    assert memo.deepep_arm_whatif(result, {"cuda_graphs": True}) is kept
    monkeypatch.setattr(memo, "loaded", lambda: False)  # one scenario in a fresh process
    other = decide_resolved(resolve(ASKED))
    whole = memo.deepep_arm_whatif(other, {"cuda_graphs": True})
    assert list(other.whatifs) == [(("cuda_graphs", True),)]  # the whole what-if, kept as one
    assert whole.arms["allgather"] is not other.arms["allgather"]


def test_the_words_what_ifs_are_bound_to_the_result(result: Result) -> None:
    """`deepep_arm` and `bound_mover` read the memo; `afresh` computes anew and keeps nothing."""
    w = memo.whatifs_of(result)
    assert w.deepep_arm({"comms": 8}) is memo.whatif(result, {"comms": 8}).arms["deepep"]
    assert w.bound_mover({"comms": 8}) is memo.whatif(result, {"comms": 8})
    kept = dict(result.whatifs)
    first, second = w.afresh({"comms": 8}), w.afresh({"comms": 8})
    assert first is not second and result.whatifs == kept
    assert first.arms["allgather"] is not result.arms["allgather"]  # the whole scenario, anew
    assert first.arms["deepep"].step_ms == kept[(("comms", 8),)].arms["deepep"].step_ms
