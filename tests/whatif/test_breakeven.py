"""Break-even answers, substituted back into the model, reproduce the tie they claim."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q
from deepep_calc.catalog.constants import const
from deepep_calc.cli import main
from deepep_calc.decide.verdict import classify_codes
from deepep_calc.estimate.result import table_for
from deepep_calc.fit.build import built_in_table
from deepep_calc.fit.table import Table
from deepep_calc.io.inputs import resolve_files
from deepep_calc.physics.deepep import KernelShape, KernelSite, kernel_us, scaleout_bw
from deepep_calc.question.scenario import Resolved, Scenario, resolve
from deepep_calc.whatif.breakeven import (
    breakeven,
    capacity_field,
    capacity_nodes,
    comms_bandwidth,
    comms_proxy,
    concurrency_cross,
    ep_nodes,
    first_true,
    issue_bound,
    kernel_shifted,
    kernel_tie,
    model,
    qps_kernel,
)
from deepep_calc.whatif.breakeven import transport as breakeven_transport
from paths import FIXTURES

GDA = Scenario(model="deepseek-v3", nodes=4, transport="efa-gda", engine="sglang", cuda_graphs=True)
IB = Scenario(
    model="deepseek-v3", instance="ib-h800", transport="ib-ibgda", nodes=4, engine="vllm", cuda_graphs=True
)
# vLLM eager over UCCL-EP: at light load both arms wait for the same host launches (a tie, just
# under 1); once the batch grows, vLLM's AGRS path, which costs more per decode token, passes the
# CPU path and DeepEP pulls ahead.
CROSS = Scenario(model="deepseek-v3", nodes=2, transport="efa-uccl", engine="vllm", isl=1024, osl=256)
KIMI = Scenario(model="kimi-k2", nodes=2, concurrency=256, isl=4096)


def _r(s: Scenario) -> Resolved:
    return resolve(s)


def _ratio(r: Resolved, table: Table | None = None, **arrays: object) -> float:
    return float(np.asarray(model(r, table, **arrays).ratio_deepep_vs_alternative.value).reshape(-1)[0])


def _per_layer_us(r: Resolved, table: Table | None = None) -> float:
    comm = model(r, table).arms["deepep"].breakdown_ms["moe_comm"]
    return float(np.asarray(comm.value).reshape(-1)[0]) * 1000.0 / r.model.moe_layers


@pytest.mark.parametrize("scenario", [GDA, IB], ids=["efa-gda", "ib-ibgda"])
def test_kernel_latency_substituted_back_ties(scenario: Scenario) -> None:
    r = _r(scenario)
    answer = kernel_tie(r)
    assert answer.value is not None and answer.value.unit == "us"
    assert answer.value.tag is not None and answer.value.source
    shift = answer.value.scalar - _per_layer_us(r)
    shifted = kernel_shifted(r, shift)
    # the shifted model really runs its kernels at the answer's latency per layer ...
    assert _per_layer_us(r, shifted) == pytest.approx(answer.value.scalar, rel=1e-9)
    # ... and there DeepEP's aggregate equals the alternative's
    assert _ratio(r, shifted) == pytest.approx(1.0, abs=0.01)
    # a little faster wins, a little slower loses
    assert _ratio(r, kernel_shifted(r, shift - 5.0)) > 1.0 > _ratio(r, kernel_shifted(r, shift + 5.0))


def test_kernel_latency_never_ties_when_the_rest_of_the_step_decides() -> None:
    answer = kernel_tie(_r(Scenario()))  # the default scenario: the proxy and engine dominate
    assert answer.value is None
    assert "no fixed latency" in answer.note and "the rest of its step" in answer.note
    assert answer.check["floor_us"].scalar < answer.check["now_us"].scalar


@pytest.mark.parametrize("win", [False, True])
def test_concurrency_crossing_brackets_the_threshold(win: bool) -> None:
    r = _r(CROSS)
    answer = concurrency_cross(r, win=win)
    threshold = 1.0 + const("noise_band").scalar if win else 1.0
    assert answer.value is not None
    c = int(answer.value.scalar)
    assert c > 1
    at, below = _ratio(r, concurrency=[c]), _ratio(r, concurrency=[c - 1])
    assert below < threshold <= at
    assert at == pytest.approx(threshold, rel=0.01)  # substituted back: a tie within 1 %
    assert answer.check["ratio_at"].scalar == pytest.approx(at)


def test_capacity_isl_search_stops_at_the_context_window() -> None:
    """The default model holds any input its window allows on one node: never, within limits."""
    answer = capacity_field(_r(Scenario()), "isl")
    assert answer.value is None
    # 40,960 - OSL 128
    assert answer.note.startswith("Never: one node holds any input length up to 40,832 tokens")


def test_concurrency_never_names_the_cards_max_concurrency() -> None:
    """Issue 13 item 7: "never within limits (concurrency 1 to 10,000,000)" sat beside a card whose
    max concurrency was far lower. The search stops at the card's figure (the smaller of the two
    compared arms') and the sentence names it, with the ratio there."""
    from deepep_calc import evaluate

    answer = concurrency_cross(_r(Scenario()), win=False)
    assert answer.value is None and answer.short == "never"
    m = re.search(
        r"^Never up to concurrency ([\d,]+), .*card's max concurrency.*reaches ([\d.]+)×", answer.note
    )
    assert m and float(m.group(2)) < 1
    card = evaluate(Scenario()).arms
    shown = min(card["deepep"].memory.max_concurrency.scalar, card["allgather"].memory.max_concurrency.scalar)
    assert int(m.group(1).replace(",", "")) == int(shown)
    assert answer.check["max_concurrency"].scalar == shown


def test_capacity_isl_is_where_one_node_runs_out() -> None:
    # inside the model's context window (ISL + OSL beyond it is refused, issue 10 item 6)
    r = _r(Scenario(concurrency=2048, engine="vllm"))
    answer = capacity_field(r, "isl")
    assert answer.value is not None
    isl = int(answer.value.scalar)
    res = model(r, isl=[isl, isl - 1])
    codes, _ = classify_codes(res)
    assert list(codes) == ["capacity", "dense"]
    mem = res.arms["replica"].memory
    total, usable = np.asarray(mem.total_gb.value), float(np.asarray(mem.usable_gb.value).reshape(-1)[0])
    assert total[0] > usable >= total[1]
    assert total[0] == pytest.approx(usable, rel=0.01)


def test_capacity_when_weights_alone_do_not_fit() -> None:
    r = _r(KIMI)
    assert capacity_field(r, "isl").value.scalar == 1
    assert capacity_field(r, "concurrency").value.scalar == 1
    forced = capacity_nodes(r)
    assert forced.value is None and "every node count" in forced.note
    ep = ep_nodes(r)
    assert ep.value is not None and ep.value.scalar == 2
    fits = model(r, nodes=[1, 2]).arms["deepep"].fits_memory
    assert list(np.asarray(fits)) == [False, True]


def test_capacity_nodes_brackets() -> None:
    r = _r(Scenario(model="deepseek-v3", engine="vllm", concurrency=4096, isl=8192))
    answer = capacity_nodes(r)
    n = int(answer.value.scalar)
    assert n > 1
    codes, _ = classify_codes(model(r, nodes=[n - 1, n]))
    assert codes[0] == "capacity" and codes[1] != "capacity"


def test_comms_proxy_lane_share_equals_fixed_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """K* = proxy_lane_us / proxy_fixed_us: beyond it the part more comms divide is the smaller."""
    r = _r(Scenario(engine="vllm"))
    fit = built_in_table().engine("vllm", False)
    answer = comms_proxy(r)
    k = answer.check["solution"]  # the exact root; the value is the whole setting above it
    assert fit.proxy_lane_us.scalar / k.scalar == pytest.approx(fit.proxy_fixed_us.scalar, rel=1e-9)
    assert answer.value is not None and answer.value.scalar == math.ceil(k.scalar)
    sglang = comms_proxy(_r(Scenario(engine="sglang")))  # its fit: the fixed part is the larger
    assert built_in_table().engine("sglang", False).proxy_lane_us.scalar < fit.proxy_lane_us.scalar
    assert sglang.value is None and sglang.note.startswith("Not issue-bound at any setting")
    none = replace(fit, proxy_fixed_us=fit.proxy_fixed_us * 0.0)  # no fixed part at all
    table = built_in_table().with_engine("vllm", False, none)
    monkeypatch.setattr(breakeven_transport, "table_for", lambda _r: table)
    zero = comms_proxy(_r(Scenario(engine="vllm")))
    assert zero.value is None and zero.note.startswith("Never up to EP_NUM_COMMS=")
    assert comms_proxy(_r(GDA)).value is None  # GPU-initiated: not applicable
    graphs = comms_proxy(_r(Scenario(engine="vllm", cuda_graphs=True)))
    assert graphs.value is None and "CUDA graphs" in graphs.note


def test_comms_bandwidth_reaches_line_rate() -> None:
    r = _r(Scenario())
    answer = comms_bandwidth(r)
    k = answer.check["solution"].scalar
    assert answer.value.scalar == math.ceil(k)  # whole comms, rounded up: the line rate is reached there
    line = r.instance.net_gb_s_per_gpu(r.gpus_per_node).scalar
    bw_at = scaleout_bw(r.transport, r.instance, r.gpus_per_node, k).scalar
    bw_below = scaleout_bw(r.transport, r.instance, r.gpus_per_node, 0.9 * k).scalar
    assert bw_at == pytest.approx(line, rel=0.01)
    assert bw_below < 0.99 * line


def test_qps_issue_bound_at_every_modelled_qp_over_the_proxy() -> None:
    """The proxy's per-selection cost is fitted where its reference is issue-bound, and both
    the issue pipe and the wire scale with remote selections: issue-bound at any load, so
    more queue pairs help up to the reference's count."""
    r = _r(KIMI)
    answer = qps_kernel(r)
    assert answer.value is None and "every QP count" in answer.note
    assert issue_bound(r, np.array([1.0, 2.0, 6.0])).all()
    c = answer.check
    assert c["kernel_us"].scalar > c["issue_free_us"].scalar
    assert qps_kernel(_r(GDA)).value is None


def test_kernel_is_issue_bound_at_every_modelled_qp_when_lanes_saturate() -> None:
    """At 128 tokens per rank (concurrency 2048 on 16 ranks) the proxy's issue path binds up to
    the reference's 6 QPs; at the default scenario's 2 tokens per rank the latency of leaving
    the node binds from 2 QPs on, so a higher cap would not shorten the kernel there."""
    answer = qps_kernel(_r(Scenario(concurrency=2048)))
    assert answer.value is None and "every QP count" in answer.note
    small = qps_kernel(_r(Scenario()))
    assert small.value is not None and small.value.scalar == 2.0
    assert "leaving the node" in small.note


def test_first_true() -> None:
    assert first_true(lambda x: x >= 12_345, 1, 10_000_000) == 12_345
    assert first_true(lambda x: x >= 1, 1, 100) == 1
    assert first_true(lambda x: x > 100, 1, 100) is None
    assert first_true(lambda x: x >= 100, 1, 100) == 100


def test_all_answers_are_tagged_quantities_and_json() -> None:
    answers = breakeven(GDA)
    keys = [a.key for a in answers]
    assert keys == [
        "kernel_tie_us",
        "concurrency_tie",
        "concurrency_win",
        "capacity_isl",
        "capacity_conc",
        "capacity_nodes",
        "ep_nodes",
        "comms_proxy",
        "comms_bandwidth",
        "qps_kernel",
    ]
    for a in answers:
        assert a.note
        if a.value is not None:
            assert isinstance(a.value, Q) and a.value.source
        json.dumps(a.to_json(), allow_nan=False)


def test_breakeven_solves_the_question_the_face_resolved() -> None:
    """A `Resolved` is answered as given, keyword fields go on top of it (`Resolved.change`),
    and a config.json is read only by the face's resolver: the catalog alone refuses the path."""
    given = [a.to_json() for a in breakeven(GDA)]
    assert [a.to_json() for a in breakeven(resolve(GDA))] == given
    assert [a.to_json() for a in breakeven(resolve(GDA.copy(nodes=2)), nodes=4)] == given
    path = str(FIXTURES / "hf" / "deepseek-v3" / "config.json")
    with pytest.raises(InputError) as refused:
        breakeven(GDA, model=path)
    assert refused.value.field == "--model"
    read: list[str] = []

    def reading(s: Scenario) -> Resolved:
        read.append(s.model)
        return resolve_files(s)

    answers = breakeven(GDA, resolve=reading, model=path)
    assert read == [path]  # resolved once, every answer solved on it
    assert [a.key for a in answers] == [a["key"] for a in given]


def test_cli_breakeven_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["breakeven", "--model", "deepseek-v3", "--nodes", "4", "--transport", "efa-gda", "--json"])
    out = json.loads(capsys.readouterr().out)
    tie = out["answers"][0]
    assert tie["key"] == "kernel_tie_us"
    assert set(tie["value"]) == {"value", "unit", "tag", "source"}


def test_kernel_shift_moves_only_the_fixed_latency() -> None:
    r = _r(GDA)
    shape = KernelShape(16.0, 7168, 8, 256)
    base_k = table_for(r).kernel_constants(r.transport.name, r.instance.name)
    base = kernel_us(KernelSite(r.transport, r.instance, 8, 32, 8, 2), shape, base_k)["total"].scalar
    moved_k = kernel_shifted(r, 40.0).kernel_constants(r.transport.name, r.instance.name)
    moved = kernel_us(KernelSite(r.transport, r.instance, 8, 32, 8, 2), shape, moved_k)["total"].scalar
    assert moved - base == pytest.approx(40.0)


def test_capacity_is_memory_not_a_queue() -> None:
    """One node's memory holds any concurrency once the engine caps its batch: queueing past the
    prompt ceiling makes nothing fit (the verdict says so), but it never forces sharding."""
    answer = capacity_field(_r(Scenario()), "concurrency")
    assert answer.value is None and answer.note.startswith("Never: one node holds any concurrency")
    crowded = capacity_nodes(_r(Scenario(concurrency=1_000_000)))
    assert crowded.note.startswith("Never forced: one node holds this load")


_BAD_WORDING = re.compile(r"\b1 (nodes|requests|tokens|comms)\b|\d\.\d+ comms\b|within limits")


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--model", "deepseek-v3", "--nodes", "4", "--transport", "efa-gda"),
        ("--engine", "sglang"),
        ("--model", "kimi-k2", "--nodes", "2", "--concurrency", "256", "--isl", "4096"),
    ],
    ids=["default", "gda", "sglang", "kimi"],
)
def test_cli_breakeven_reads_as_sentences(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    """Issue 13 item 7: every answer is a value with its unit and tag marker (or a word), and a
    sentence; whole knobs print whole and say they were rounded; singular and plural agree."""
    from cli_runner import run_cli

    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "breakeven", *args)
    assert code == 0, err
    assert not _BAD_WORDING.search(out), _BAD_WORDING.search(out)
    answers = [line.strip()[2:] for line in out.splitlines() if line.lstrip().startswith("→ ")]
    assert len(answers) == 10
    for answer in answers:
        if answer.split()[0] in ("never", "always", "not") or answer == "never issue-bound":
            continue
        assert re.fullmatch(
            r"([\d,.]+ (µs|nodes?|requests?|tokens?)|EP_(NUM_COMMS|EFA_MAX_QPS)=\d+) [●◐○]", answer
        ), answer
    code, raw, err = run_cli(capsys, "breakeven", *args, "--json")
    notes = [a["note"] for a in json.loads(raw)["answers"]]
    assert all(n[0].isupper() and n.endswith(".") for n in notes), notes
    assert "rounded in the direction that keeps the sentence true" in out
    assert "● measured  ◐ derived  ○ assumed" in out


def test_whole_settings_are_rounded_up_and_say_so() -> None:
    """EP_NUM_COMMS 14.8 is not a setting: the answer is 15, where the curve has reached line rate."""
    answer = comms_bandwidth(_r(Scenario()))
    assert answer.value is not None and answer.value.scalar == 15
    assert answer.check["solution"].scalar == pytest.approx(14.8, abs=0.05)
    assert answer.note.startswith("From EP_NUM_COMMS=15 (14.8 rounded up)")
    nodes = ep_nodes(_r(Scenario()))
    assert nodes.note.startswith("DeepEP fits from 1 node:")
    json.dumps(answer.to_json(), allow_nan=False)
    assert answer.to_json()["short"] == ""
