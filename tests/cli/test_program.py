"""The `deepep-calc` program (`cli/program.py`): the commands, the `--json` shapes of evaluate and
kernel and the catalog listings, bare `--json` as the default scenario, every expected failure as
one line with exit code 2; and the entry point's own rules: which commands register, how a
signal, Ctrl-C or a closed pipe ends a run, and which signal handlers a run leaves behind."""

from __future__ import annotations

import errno
import json
import signal
import threading
from pathlib import Path

import click
import pytest

from cli_runner import run, run_cli
from deepep_calc.cli import program
from paths import TESTS

Q_KEYS = {"value", "unit", "tag", "source"}

BAND_KEYS = {"low", "high"}  # additive: a modelled figure carries its band, a measured one none


def _is_q(d: dict) -> bool:
    keys = set(d)
    if keys == Q_KEYS:
        return True
    return keys == Q_KEYS | BAND_KEYS and d["tag"] != "measured" and d["low"] <= d["value"] <= d["high"]


def test_default_card_shows_calibration(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([], capsys)
    assert code == 0
    assert "19.6 tok/s ●" in out and "27.6 tok/s ●" in out and "14.7 ms/token ◐" in out  # tag markers
    assert "● measured" in out  # and their legend
    assert "Use DENSE" in out


def test_evaluate_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["evaluate", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert {"scenario", "verdict", "arms", "ratio_deepep_vs_alternative", "tax_ms_per_token"} <= doc.keys()
    assert doc["verdict"]["code"] in ("dense", "capacity", "deepep")
    assert {"headline", "reasons", "advisories", "flags"} <= doc["verdict"].keys()
    assert set(doc["arms"]) == {"deepep", "allgather", "replica"}
    for arm in doc["arms"].values():
        assert isinstance(arm["feasible"], bool) and isinstance(arm["fits_memory"], bool)
        for key in (
            "per_user_tok_s",
            "step_ms",
            "aggregate_tok_s",
            "ttft_ms",
            "usd_per_mtok",
            "memory_gb_per_gpu",
        ):
            assert _is_q(arm[key]) and arm[key]["tag"] in ("measured", "derived", "assumed")
        assert all(set(v) == Q_KEYS for v in arm["breakdown_ms"].values())
    # at the default scenario the measured figures carry no band; the TTFT (modelled) does
    dee = doc["arms"]["deepep"]
    assert dee["per_user_tok_s"]["tag"] == "measured" and "low" not in dee["per_user_tok_s"]
    assert dee["ttft_ms"]["tag"] != "measured" and {"low", "high"} <= set(dee["ttft_ms"])
    assert doc["tax_ms_per_token"]["tag"] == "derived"
    assert round(doc["tax_ms_per_token"]["value"], 1) == 14.7


def test_evaluate_tp_alternative(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["evaluate", "--alternative", "tp", "--model", "deepseek-v3", "--nodes", "4", "--json"], capsys
    )
    assert code == 0 and set(json.loads(out)["arms"]) == {"deepep", "tp", "replica"}


def test_kernel_json_reproduces_the_reference_at_its_own_qps(capsys: pytest.CaptureFixture[str]) -> None:
    """EP_EFA_MAX_QPS is part of the question: the gate run (6 QPs) answers --max-qps 6, the
    QP-cap-2 campaign answers the default 2, and 3 QPs (no reference) is the model, between."""

    def kernel(*extra: str) -> dict:
        code, out, _ = run(
            ["kernel", "--transport", "efa-proxy", "--instance", "p5en", "--ep", "16", *extra, "--json"],
            capsys,
        )
        assert code == 0
        return json.loads(out)

    at6 = kernel("--max-qps", "6")
    assert set(at6) == {"dispatch_us", "combine_us", "total_us", "parts_us", "binds", "measurements"}
    assert at6["dispatch_us"]["value"] == 185.4 and at6["dispatch_us"]["tag"] == "measured"
    assert at6["combine_us"]["value"] == 258.2
    assert kernel("--qps", "6") == at6  # the old spelling still works
    at2 = kernel()
    assert (at2["dispatch_us"]["value"], at2["combine_us"]["value"]) == (380.0, 360.0)
    assert at2["dispatch_us"]["tag"] == "measured" and "V2Q" in at2["dispatch_us"]["source"]
    at3 = kernel("--max-qps", "3")
    assert at3["total_us"]["tag"] != "measured" and {"low", "high"} <= set(at3["total_us"])
    assert at6["total_us"]["value"] < at3["total_us"]["value"]  # fewer queue pairs, slower
    more = kernel("--max-qps", "129")  # not credited above the reference's count: the model at 6
    assert more["total_us"]["tag"] != "measured"
    at7 = kernel("--max-qps", "7")  # no reference at 7 either: the model, capped at 6 as well
    assert more["total_us"]["value"] == pytest.approx(at7["total_us"]["value"], rel=1e-9)
    # the model at 6 QPs is the pooled fit of six efa-proxy references: near the gate run, not it
    assert more["total_us"]["value"] == pytest.approx(at6["total_us"]["value"], rel=0.20)


@pytest.mark.parametrize("cmd", ["models", "instances", "transports"])
def test_catalog_commands(cmd: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([cmd, "--json"], capsys)
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 3 and all("name" in r for r in rows)
    code, text, _ = run([cmd], capsys)
    assert code == 0 and rows[0]["name"] in text


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["evaluate", "--model", "no-such-model"], "--model"),
        (["evaluate", "--instance", "p9"], "--instance"),
        (["evaluate", "--transport", "carrier-pigeon"], "--transport"),
        (["evaluate", "--engine", "tgi"], "--engine"),
        (["evaluate", "--concurrency", "0"], "--concurrency"),
        (["evaluate", "--concurrency", "-5"], "--concurrency"),
        (["evaluate", "--nodes", "0"], "--nodes"),
        (["evaluate", "--nodes", "-1"], "--nodes"),
        (["evaluate", "--topk", "999"], "--topk"),
        (["evaluate", "--isl", "abc"], "--isl"),
        (["evaluate", "--weight-dtype", "fp3"], "--weight-dtype"),
        (["evaluate", "--transport", "ib-ibgda"], "--transport"),
        (["evaluate", "--model", "/no/such/dir/config.json"], "config.json"),
        (["evaluate", "--concurrency", "99999999999"], "--concurrency"),
        (["kernel", "--ep", "0"], "--ep"),
        (["kernel", "--topk", "9", "--experts", "8"], "--topk"),
        (["evaluate", "--no-such-flag"], "no-such-flag"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deepep-calc: error:"), err
    assert needle in lines[0]
    assert "Traceback" not in err


def test_malformed_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "qwen3_moe", "hidden_size": ')
    code, _, err = run(["evaluate", "--model", str(bad)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "config.json" in err
    unknown = tmp_path / "u" / "config.json"
    unknown.parent.mkdir()
    unknown.write_text('{"model_type": "llama", "hidden_size": 4096}')
    code, _, err = run(["evaluate", "--model", str(unknown.parent)], capsys)
    assert code == 2 and "model_type" in err


def test_config_json_path_evaluates(capsys: pytest.CaptureFixture[str]) -> None:
    folder = TESTS / "fixtures" / "hf" / "deepseek-v3"
    code, out, _ = run(["evaluate", "--model", str(folder), "--instance", "p5", "--json"], capsys)
    assert code == 0 and json.loads(out)["verdict"]["code"] == "capacity"


def test_bare_json_is_the_default_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code, bare, _ = run_cli(capsys, "--json")
    assert code == 0
    code, explicit, _ = run_cli(capsys, "evaluate", "--json")
    assert code == 0
    assert json.loads(bare) == json.loads(explicit)
    assert json.loads(bare)["verdict"]["code"] == "dense"


def test_json_before_a_command_says_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "--json", "kernel")
    assert code == 2 and out == ""
    assert "deepep-calc kernel --json" in err and err.count("\n") == 1


# The entry point --------------------------------------------------------------------------------


def test_every_command_is_registered() -> None:
    """Built in: evaluate, kernel and the three catalog listings; each extension module adds its
    own through `register(app)`."""
    program._load_extensions()
    assert set(program.app.commands) == {
        "evaluate",
        "kernel",
        "models",
        "instances",
        "transports",
        "calibrate",
        "serve",
        "report",
        "sweep",
        "breakeven",
        "sensitivity",
        "validate",
        "plan",
    }
    assert [name for name, *_ in program.CATALOGS] == ["models", "instances", "transports"]


def test_version_and_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.startswith("deepep-calc, version ")
    code, out, _ = run_cli(capsys, "-h")
    assert code == 0 and "Usage: deepep-calc" in out and "evaluate" in out


@pytest.fixture
def handlers():
    """The SIGTERM, SIGHUP and SIGINT handlers, put back after the test whatever it left."""
    names = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    before = {s: signal.getsignal(s) for s in names}
    yield before
    for s, h in before.items():
        signal.signal(s, h)


def failing_with(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make the click app raise `exc` as a command would."""

    def main(*_a, **_k):
        raise exc

    monkeypatch.setattr(program.app, "main", main)


def test_a_stop_signal_exits_128_plus_its_number_and_ignores_a_second(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], handlers
) -> None:
    """SIGTERM is 15: exit 143. A service manager's second SIGTERM must not kill an exit already
    under way, so a default SIGTERM handler is left ignored rather than restored."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    failing_with(monkeypatch, program.Stopped(signal.SIGTERM))
    code, out, err = run_cli(capsys)
    assert (code, out, err) == (143, "", "deepep-calc: stopped by SIGTERM\n")
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    failing_with(monkeypatch, program.Stopped(signal.SIGHUP))
    assert run_cli(capsys)[0] == 129  # SIGHUP is 1


def test_ctrl_c_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing_with(monkeypatch, click.exceptions.Abort())
    assert run_cli(capsys) == (130, "", "deepep-calc: interrupted\n")


def test_a_closed_pipe_ends_the_run_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`deepep-calc models | head`: exit 0, nothing on stderr, stdout pointed at /dev/null (here a
    recorder: the test's own stdout stays)."""
    quieted: list[bool] = []
    monkeypatch.setattr(program, "_quiet_stdout", lambda: quieted.append(True))
    failing_with(monkeypatch, BrokenPipeError())
    assert run_cli(capsys) == (0, "", "")
    assert quieted == [True]
    failing_with(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))  # not a pipe: raised
    with pytest.raises(OSError):
        program.main([])


@pytest.mark.parametrize(
    ("exc", "closed"),
    [
        (BrokenPipeError(), True),
        (OSError(errno.EPIPE, "Broken pipe"), True),
        (OSError(errno.ENOENT, "No such file"), False),
        (SystemExit(2), False),
        (SystemExit(0), False),
    ],
)
def test_closed_pipe_is_only_the_reader_going_away(exc: BaseException, closed: bool, monkeypatch) -> None:
    monkeypatch.setattr(program, "_stdout_gone", lambda: False)
    assert program._closed_pipe(exc) is closed


def test_an_exit_1_is_a_closed_pipe_when_it_came_from_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich and click turn a BrokenPipeError into SystemExit(1): a pipe if that was its cause,
    or if stdout's reader is gone; any other exit 1 is a failure."""
    monkeypatch.setattr(program, "_stdout_gone", lambda: False)
    from_pipe = SystemExit(1)
    from_pipe.__context__ = BrokenPipeError()
    assert program._closed_pipe(from_pipe) is True
    assert program._closed_pipe(SystemExit(1)) is False
    monkeypatch.setattr(program, "_stdout_gone", lambda: True)
    assert program._closed_pipe(SystemExit(1)) is True


def test_signals_are_caught_while_a_command_runs_and_restored_after(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], handlers
) -> None:
    during: list[object] = []
    monkeypatch.setattr(program.app, "main", lambda *a, **k: during.append(signal.getsignal(signal.SIGTERM)))
    assert run_cli(capsys)[0] == 0
    assert during == [program._stop]
    assert signal.getsignal(signal.SIGTERM) == handlers[signal.SIGTERM]
    assert signal.getsignal(signal.SIGHUP) == handlers[signal.SIGHUP]


def test_off_the_main_thread_no_handler_is_touched() -> None:
    got: list[dict] = []
    thread = threading.Thread(target=lambda: got.append(program._catch_signals()))
    thread.start()
    thread.join()
    assert got == [{}]


def test_a_signal_outside_a_file_section_stops_at_once() -> None:
    with pytest.raises(program.Stopped) as info:
        program._stop(signal.SIGTERM, None)
    assert info.value.signum == signal.SIGTERM
    with pytest.raises(KeyboardInterrupt):
        program._stop(signal.SIGINT, None)


def test_stopped_is_not_an_exception_a_handler_could_swallow() -> None:
    assert issubclass(program.Stopped, BaseException) and not issubclass(program.Stopped, Exception)
    assert program.Stopped(1).args == (1,)


def test_cli_json_has_the_deployment_and_the_nodes_are_p_plus_d(capsys):
    code, out, _ = run_cli(capsys, "evaluate", "--disagg", "1P3D", "--model", "deepseek-v3", "--json")
    assert code == 0
    j = json.loads(out)
    assert j["scenario"]["nodes"] == 4 and j["scenario"]["prefill_nodes"] == 1
    assert j["disaggregated"]["layout"] == "1P3D"
    code, out, _ = run_cli(capsys, "evaluate", "--json")
    assert json.loads(out)["disaggregated"] is None
