"""Break-even answers (`whatif/breakeven/__init__.py`: `breakeven`): every answer for one question,
solved on the question the face resolved, tagged and in JSON, and read as sentences. Each
answer's own tests, substituted back into the model, are tests/whatif/breakeven/test_<module>.py.
`first_true`, the search every answer runs, is `estimate/passes.py`'s, re-exported here."""

from __future__ import annotations

import json
import re

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q
from deepep_calc.cli import main
from deepep_calc.io.inputs import resolve_files
from deepep_calc.question.scenario import Resolved, Scenario, resolve
from deepep_calc.whatif.breakeven import breakeven, first_true
from paths import FIXTURES

from .breakeven.scenarios import GDA


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
