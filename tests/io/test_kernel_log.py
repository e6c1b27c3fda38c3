"""DeepEP kernel-log import (`io/kernel_log.py`): the shipped sample, the line shapes DeepEP
prints, the guards, and the transport a log states about itself (issue 10 item 10: a log of
another transport than the one it would calibrate is refused)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calibrate.user_runs import DEEPEP_NAME, DENSE_NAME, REAL
from cli_runner import run_cli
from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.transports import get_transport
from deepep_calc.io.kernel_log import SAMPLE_LOG, check_transport, load_kernel_log, parse_kernel_log
from one_line import assert_one_line


def test_sample_log_medians_are_the_published_gate_run() -> None:
    log = load_kernel_log(SAMPLE_LOG)
    assert log.dispatch_p50_us is not None and log.combine_p50_us is not None
    assert log.dispatch_p50_us.value == 185.4
    assert log.combine_p50_us.value == 258.2
    assert log.total_p50_us is not None and log.total_p50_us.value == 443.6
    for q in (log.dispatch_p50_us, log.combine_p50_us, log.total_p50_us):
        assert q.tag is Tag.MEASURED
        assert q.unit == "us"
        assert SAMPLE_LOG.name in q.source


def test_sample_log_structure() -> None:
    log = load_kernel_log(SAMPLE_LOG)
    assert log.ranks == list(range(16))
    assert len(log.dispatch_us) == len(log.combine_us) == len(log.total_us) == 16
    assert len(set(log.dispatch_us)) > 8  # a spread, not sixteen copies
    assert max(log.dispatch_us) - min(log.dispatch_us) < 0.1 * 185.4
    assert (
        log.shape.tokens,
        log.shape.hidden,
        log.shape.topk,
        log.shape.experts,
        log.shape.ranks,
    ) == (128, 7168, 8, 256, 16)
    assert log.buffer_mb == pytest.approx(2116.291072)
    assert len(log.send_recv) == 32
    assert all(35 < g < 50 for g in log.dispatch_gbps)
    assert log.warnings == []
    first_line = SAMPLE_LOG.read_text().splitlines()[0]
    assert first_line.startswith("#") and "synthesised" in first_line.lower()
    assert "not a raw log" in first_line.lower()


def test_deepep_line_shapes() -> None:
    text = "\n".join(
        [
            "Allocating buffer size: 2116.291072 MB ...",
            "num_tokens=128, hidden=7168, num_topk=8, num_experts=256",
            "[rank 0] Dispatch bandwidth: 46.52 GB/s, avg_t=161.49 us, min_t=150.02 us, max_t=172.33 us",
            "[rank 0] Combine bandwidth: 56.10 GB/s, avg_t=258.20 us, min_t=240.00 us, max_t=270.10 us",
            "[rank 0] Dispatch + combine bandwidth: 52.31 GB/s, avg_t=443.60 us, min_t=420.00 us, "
            "max_t=470.00 us",
            # DeepEP's own test prints dispatch and combine on one line, split by " | "
            "[rank 1] Dispatch bandwidth: 45.00 GB/s, avg_t=170.00 us | Combine bandwidth: "
            "55.00 GB/s, avg_t=0.26 ms",
            "[rank 3] Dispatch send/recv time: 28.11 + 97.30 us | Combine send/recv time: 37.42 + 120.55 us",
            "[tuning] SMs 24, NVL chunk 4, RDMA chunk 4: 1400.00 us, 40.00 GB/s (RDMA), 130.00 GB/s (NVL)",
            "[tuning] Best dispatch (FP8): SMs 24, NVL chunk 32, RDMA chunk 16: 1196.00 us, "
            "50.12 GB/s (RDMA), 163.40 GB/s (NVL)",
            "[tuning] Best combine: SMs 24, NVL chunk 8, RDMA chunk 8: 43.10 GB/s (RDMA), 140.20 GB/s (NVL)",
            "some unrelated warning line from NCCL",
        ]
    )
    log = parse_kernel_log(text, Path("mixed.log"))
    assert log.dispatch_us == [161.49, 170.0]
    assert log.combine_us == [258.2, 260.0]  # 0.26 ms converted
    assert log.total_us == [443.6]
    assert log.dispatch_gbps == [46.52, 45.0]
    first = next(s for s in log.samples if s.kind == "dispatch")
    assert (first.rank, first.min_us, first.max_us) == (0, 150.02, 172.33)
    assert log.dispatch_p50_us is not None and log.dispatch_p50_us.value == pytest.approx(165.745)
    sr = {s.kind: s for s in log.send_recv}
    assert sr["dispatch"].rank == 3
    assert (sr["dispatch"].send_us, sr["dispatch"].recv_us) == (28.11, 97.30)
    assert (sr["combine"].send_us, sr["combine"].recv_us) == (37.42, 120.55)
    assert len(log.tuning) == 2  # only the "Best" lines
    best_d, best_c = log.tuning
    assert (best_d.kind, best_d.dtype, best_d.sms, best_d.nvl_chunk, best_d.rdma_chunk) == (
        "dispatch",
        "FP8",
        24,
        32,
        16,
    )
    assert best_d.time_us is not None and best_d.time_us.value == 1196.0
    assert best_d.time_us.tag is Tag.MEASURED and "mixed.log" in best_d.time_us.source
    assert (best_d.rdma_gbps, best_d.nvl_gbps) == (50.12, 163.40)
    assert best_c.dtype is None and best_c.time_us is None and best_c.rdma_gbps == 43.10
    assert (log.shape.tokens, log.shape.hidden, log.shape.topk, log.shape.experts) == (
        128,
        7168,
        8,
        256,
    )


def test_tuning_only_log_and_missing_shape_warning() -> None:
    log = parse_kernel_log(
        "[tuning] Best dispatch (BF16): SMs 24, NVL chunk 32: 800.00 us, 160.00 GB/s (NVL)\n",
        Path("intranode.log"),
    )
    assert log.dispatch_p50_us is None and log.tuning[0].rdma_chunk is None
    assert log.tuning[0].nvl_gbps == 160.0
    only_bw = parse_kernel_log("[rank 0] Dispatch bandwidth: 40.00 GB/s\n", Path("bw.log"))
    assert any("no avg_t" in w for w in only_bw.warnings)
    assert any("does not state num_tokens" in w for w in only_bw.warnings)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.log", b"", "empty"),
        ("blank.log", b"\n  \n", "empty"),
        ("chatter.log", b"NCCL INFO ring 0\n# Dispatch bandwidth in a comment\n", "no DeepEP"),
        (
            "latin1.log",
            "[rank 0] Dispatch bandwidth: 4 GB/s, avg_t=1 \xb5s".encode("latin-1"),
            "not UTF-8",
        ),
    ],
)
def test_bad_logs_raise_one_line(tmp_path: Path, name: str, data: bytes, needle: str) -> None:
    with pytest.raises(FileInputError) as info:
        load_kernel_log(_write(tmp_path, name, data))
    assert name in info.value.message and needle in info.value.message
    assert "\n" not in info.value.message


def test_missing_directory_and_oversize(tmp_path: Path) -> None:
    with pytest.raises(FileInputError, match="no such file"):
        load_kernel_log(tmp_path / "nope.log")
    with pytest.raises(FileInputError, match="is a directory"):
        load_kernel_log(tmp_path)
    big = tmp_path / "big.log"
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024 + 1)
    with pytest.raises(FileInputError, match="over the 50 MB limit"):
        load_kernel_log(big)


# Shapes and numbers a log states ----------------------------------------------------------------

LINE = "[rank 0] Dispatch bandwidth: 40.00 GB/s, avg_t=100 us"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("num_tokens=0", "line 2: num_tokens is 0; expected a positive number"),
        ("[rank 1] Dispatch bandwidth: 1e13 GB/s, avg_t=1 us", "line 2: 1e13 is not a plausible number"),
        ("[rank 99999999999999] Combine bandwidth: 4 GB/s", "line 2: 99999999999999 is not a plausible"),
    ],
)
def test_a_number_no_kernel_can_have_is_refused_with_its_line(extra: str, needle: str) -> None:
    """A zero in the shape would divide by 0 in the kernel model; a figure over 1e12 (or a rank
    of 14 digits) is a damaged line, not a measurement."""
    with pytest.raises(FileInputError) as info:
        parse_kernel_log(f"{LINE}\n{extra}\n", Path("a.log"))
    assert_one_line(info.value, "a.log", needle)


def test_the_first_shape_stated_wins_and_a_contradiction_is_warned_about() -> None:
    """Two ranks report dispatch but one reports combine; rank 0 reports dispatch twice: every
    line stays in the medians (dispatch of 100 and 110 us: 105), each oddity warned about."""
    log = parse_kernel_log(
        "\n".join(
            [
                LINE,
                "num_tokens=128",
                "num_tokens=64",
                "[rank 0] Dispatch bandwidth: 41 GB/s, avg_t=110 us",
                "[rank 1] Combine bandwidth: 41 GB/s, avg_t=110 us",
            ]
        ),
        Path("b.log"),
    )
    assert log.shape.tokens == 128 and log.dispatch_us == [100.0, 110.0]
    assert log.dispatch_p50_us is not None and log.dispatch_p50_us.value == 105.0
    assert log.warnings == [
        "line 3: tokens = 64 contradicts the earlier 128; keeping the first",
        "some ranks report dispatch more than once; every line is kept in the median",
        "2 ranks report dispatch but 1 report combine",
    ]


# Kernel logs: the transport they state ------------------------------------------------------------


def test_a_proxy_log_cannot_calibrate_efa_gda(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    code, _, err = run_cli(
        capsys,
        "calibrate",
        "--dense",
        REAL / DENSE_NAME,
        "--deepep",
        REAL / DEEPEP_NAME,
        "--kernel-log",
        SAMPLE_LOG,
        "--transport",
        "efa-gda",
        "-o",
        out,
    )
    assert code == 2 and "NCCL_GIN_TYPE=2, the setting of efa-proxy" in err and "efa-gda" in err
    assert not out.exists()


def test_a_log_that_names_its_transport_is_held_to_it(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    text = SAMPLE_LOG.read_text().replace("# Synthesised", "# transport: efa-uccl. Synthesised", 1)
    log.write_text(re.sub(r"NCCL-GIN type 2", "its own path", text))
    parsed = load_kernel_log(log)
    assert parsed.stated_transport == ("efa-uccl", 1)
    check_transport(parsed, get_transport("efa-uccl"))
    with pytest.raises(
        FileInputError, match=r"line 1 says the run used transport efa-uccl.*--transport efa-uccl"
    ):
        check_transport(parsed, get_transport("efa-proxy"))


def test_a_log_that_states_nothing_is_accepted_for_any_transport(tmp_path: Path) -> None:
    log = tmp_path / "plain.log"
    log.write_text(
        "\n".join(line for line in SAMPLE_LOG.read_text().splitlines() if not line.startswith("#"))
    )
    parsed = load_kernel_log(log)
    assert parsed.stated_transport is None and parsed.stated_env == {}
    for name in ("efa-proxy", "efa-gda", "ib-ibgda"):
        check_transport(parsed, get_transport(name))


def test_the_sample_log_still_calibrates_efa_proxy() -> None:
    check_transport(load_kernel_log(SAMPLE_LOG), get_transport("efa-proxy"))


def test_an_environment_setting_is_held_to_the_transport_that_sets_it() -> None:
    """NCCL_GIN_TYPE=5 is efa-gda's setting (efa-proxy runs with 2; ib-ibgda sets none): the log
    calibrates efa-gda only. A variable no catalog transport sets says nothing either way."""
    gda = parse_kernel_log(f"# NCCL_GIN_TYPE=5\n{LINE}\n", Path("c.log"))
    assert gda.stated_env == {"NCCL_GIN_TYPE": ("5", 1)}
    check_transport(gda, get_transport("efa-gda"))
    for name, wants in (
        ("efa-proxy", "efa-proxy runs with NCCL_GIN_TYPE=2"),
        ("ib-ibgda", "does not set it"),
    ):
        with pytest.raises(FileInputError) as info:
            check_transport(gda, get_transport(name))
        assert_one_line(info.value, "line 1 sets NCCL_GIN_TYPE=5, the setting of efa-gda", wants)
        assert info.value.field == "transport"
    mine = parse_kernel_log(f"# MY_SETTING=1\n{LINE}\n", Path("d.log"))
    for name in ("efa-proxy", "efa-gda", "ib-ibgda"):
        check_transport(mine, get_transport(name))
