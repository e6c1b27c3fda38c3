"""Fuzzing every file importer: whatever the bytes, the tool imports them or says why in one line.

The importers are config.json (`load_hf_config`), AIPerf JSON and CSV exports (`load_aiperf`),
calibration profiles (`load_profile`) and DeepEP kernel logs (`load_kernel_log`). Each test
feeds them hostile input (random bytes, truncations of real files, one leaf of a valid document
swapped for a wrong type, deep nesting, huge numbers, NaN, BOMs, 100 MB files, symlinks, FIFOs)
and accepts exactly two outcomes: a correct import, or the tool's own `CalcError` whose message
is one line and names the file. Any other exception fails the test.

Where an input is accepted, it is pushed one step further (evaluated, or its numbers checked),
because an importer that lets NaN or a negative latency through has only moved the crash.

Symbolic links are followed on purpose: Hugging Face caches store config.json as a link into
`blobs/`, and users link AIPerf artifact folders around. Loops and dangling links are refused.
"""

from __future__ import annotations

import builtins
import copy
import csv
import io
import itertools
import json
import math
import os
import pathlib
import re
import threading
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import run_cli
from deepep_calc import Scenario, cli
from deepep_calc.base.errors import CalcError
from deepep_calc.base.quantity import Q
from deepep_calc.estimate.kernel import kernel_query
from deepep_calc.io.aiperf import AIPerfRun, load_aiperf
from deepep_calc.io.hf_config import load_hf_config
from deepep_calc.io.kernel_log import SAMPLE_LOG, KernelLog, load_kernel_log
from deepep_calc.io.profile import load_profile
from invariant_checks import assert_finite_or_not_feasible, evaluate_or_refuse, fp_strict
from paths import TESTS

TESTS = TESTS
HF = TESTS / "fixtures" / "hf"
EXTRA = TESTS / "fixtures" / "aiperf_extra"
AIPERF = TESTS / "fixtures" / "aiperf"
PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
TRT_DENSE = AIPERF / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
TRT_DEEPEP = AIPERF / f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"
CSV_EXPORT = EXTRA / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.csv"
HF_CONFIGS = sorted(HF.glob("*/config.json"))
AIPERF_JSONS = [EXTRA / n for n in ("error_requests.json", "legacy_records_layout.json", "short_osl.json")]

# CI runs the counts below (seconds in all); FUZZ_SCALE=50 makes a deeper local hunt.
SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))
SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def examples(n: int) -> settings:
    return settings(max_examples=n * SCALE, deadline=None, suppress_health_check=SLOW_OK)


FUZZ = examples(60)

_names = itertools.count()


@dataclass(frozen=True)
class Importer:
    name: str
    load: Callable[[Path], Any]
    suffix: str


HF_IMP = Importer("config.json", load_hf_config, ".json")
JSON_IMP = Importer("aiperf-json", load_aiperf, ".json")
CSV_IMP = Importer("aiperf-csv", load_aiperf, ".csv")
PROFILE_IMP = Importer("profile", load_profile, ".toml")
LOG_IMP = Importer("kernel-log", load_kernel_log, ".log")
IMPORTERS = [HF_IMP, JSON_IMP, CSV_IMP, PROFILE_IMP, LOG_IMP]
IDS = [i.name for i in IMPORTERS]


# ---------------------------------------------------------------------------------------------
# helpers


def attempt(imp: Importer, path: Path) -> Any:
    """Import, or return the tool's error after checking it is one line naming the file.

    Any exception other than `CalcError` propagates and fails the test: that is the point.
    """
    try:
        return imp.load(path)
    except CalcError as exc:
        msg = exc.message
        assert msg, "empty error message"
        assert "\n" not in msg and "\r" not in msg, msg
        assert path.name in msg, (path.name, msg)
        return exc


def refused(imp: Importer, path: Path, *needles: str) -> str:
    out = attempt(imp, path)
    assert isinstance(out, CalcError), f"{imp.name} accepted {path.name}"
    for needle in needles:
        assert needle in out.message, (needle, out.message)
    return out.message


def put(folder: Path, imp: Importer, data: bytes | str, stem: str = "fuzz") -> Path:
    """A fresh file per example: nothing one example wrote is read by the next."""
    path = folder / f"{stem}{next(_names)}{imp.suffix}"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def finite_q(q: Any, what: str) -> None:
    if isinstance(q, Q):
        assert math.isfinite(q.scalar), (what, q)


def check_run(run: AIPerfRun) -> None:
    """An accepted export carries only finite, non-negative statistics."""
    for f in fields(run):
        value = getattr(run, f.name)
        if isinstance(value, Q):
            assert math.isfinite(value.scalar) and value.scalar >= 0, (f.name, value)


def check_log(log: KernelLog) -> None:
    for values in (log.dispatch_us, log.combine_us, log.total_us, log.dispatch_gbps, log.combine_gbps):
        assert all(math.isfinite(v) for v in values)
    for q in (log.dispatch_p50_us, log.combine_p50_us, log.total_p50_us):
        finite_q(q, "median")


def check_evaluates(scenario: Scenario) -> None:
    """An accepted model or profile evaluates soundly (see invariant_checks) or is refused."""
    result = evaluate_or_refuse(scenario)
    if result is not None:
        assert_finite_or_not_feasible(result)


def nodes(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position in a parsed document, the root included."""
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from nodes(v, (*path, i))


def mutate(doc: Any, path: tuple[Any, ...], op: str, value: Any) -> Any:
    """A copy of `doc` with the node at `path` replaced, deleted or given an unknown sibling."""
    if not path:
        return value
    out = copy.deepcopy(doc)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "sibling" and isinstance(parent, dict):
        parent["zz_unexpected"] = value
    else:
        parent[key] = value
    return out


# Values of the wrong type, sign or size; each is put at one position of a valid document.
WEIRD: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    3,
    0.5,
    -0.0,
    2**63,
    10**30,
    1e308,
    -1e308,
    5e-324,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "x",
    "1",
    "NaN",
    " \n ",
    [],
    {},
    [1, "a"],
    {"avg": 1, "unit": "ms"},
]
WEIRD_TEXT = [
    "",
    "0",
    "-1",
    "-0",
    "nan",
    "inf",
    "-inf",
    "1e999",
    "9" * 400,
    "1e-320",
    "abc",
    "1,000",
    '"',
    "0x1F",
]


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real profile: the TRT-LLM c4 A/B with the sample kernel log."""
    out = tmp_path_factory.mktemp("profile") / "trt.toml"
    args = ["calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "--kernel-log", SAMPLE_LOG]
    try:
        cli.main([str(a) for a in [*args, "-o", out, "--json"]])
    except SystemExit as exc:  # pragma: no cover - the fixture itself must work
        raise AssertionError(f"calibrate failed with {exc.code}") from None
    assert out.is_file()
    return out


@pytest.fixture(scope="module")
def valid(profile_path: Path) -> dict[str, bytes]:
    """One valid file per importer, as bytes."""
    return {
        HF_IMP.name: (HF / "deepseek-v3" / "config.json").read_bytes(),
        JSON_IMP.name: AIPERF_JSONS[0].read_bytes(),
        CSV_IMP.name: CSV_EXPORT.read_bytes(),
        PROFILE_IMP.name: profile_path.read_bytes(),
        LOG_IMP.name: SAMPLE_LOG.read_bytes(),
    }


def test_valid_files_import(workdir: Path, valid: dict[str, bytes]) -> None:
    """The baseline every fuzz test mutates really is accepted (else the fuzzing proves nothing)."""
    for imp in IMPORTERS:
        out = attempt(imp, put(workdir, imp, valid[imp.name]))
        assert not isinstance(out, CalcError), out


# ---------------------------------------------------------------------------------------------
# generated inputs

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
payloads = st.one_of(
    st.binary(max_size=2048),
    st.text(max_size=1024).map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: json.dumps(v).encode()),
)


@FUZZ
@given(imp=st.sampled_from(IMPORTERS), data=payloads)
def test_random_bytes(workdir: Path, imp: Importer, data: bytes) -> None:
    attempt(imp, put(workdir, imp, data))


@FUZZ
@given(imp=st.sampled_from(IMPORTERS), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_real_files(workdir: Path, valid: dict[str, bytes], imp: Importer, cut: float) -> None:
    data = valid[imp.name]
    attempt(imp, put(workdir, imp, data[: int(cut * len(data))]))


def test_every_prefix_of_a_small_config(workdir: Path) -> None:
    """Exhaustively: each of the ~700 prefixes of the smallest real config.json."""
    data = (HF / "mixtral-8x7b" / "config.json").read_bytes()
    path = workdir / "prefix" / "config.json"
    path.parent.mkdir()
    for n in range(len(data.rstrip())):  # dropping only trailing whitespace leaves it valid
        path.write_bytes(data[:n])
        assert isinstance(attempt(HF_IMP, path), CalcError), n


@pytest.mark.slow
@examples(150)
@given(
    data=st.data(), config=st.sampled_from(HF_CONFIGS), op=st.sampled_from(["replace", "delete", "sibling"])
)
def test_config_json_one_leaf_wrong(workdir: Path, data: st.DataObject, config: Path, op: str) -> None:
    doc = _read_json(config)
    where = data.draw(st.sampled_from(list(nodes(doc))))
    bad = mutate(doc, where, op, data.draw(st.sampled_from(WEIRD)))
    path = workdir / f"cfg{next(_names)}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(bad, allow_nan=True), "utf-8")
    out = attempt(HF_IMP, path)
    if not isinstance(out, CalcError):
        check_evaluates(Scenario(model=str(path), nodes=4))


@examples(120)
@given(
    data=st.data(), export=st.sampled_from(AIPERF_JSONS), op=st.sampled_from(["replace", "delete", "sibling"])
)
def test_aiperf_json_one_leaf_wrong(workdir: Path, data: st.DataObject, export: Path, op: str) -> None:
    doc = _read_json(export)
    where = data.draw(st.sampled_from(list(nodes(doc))))
    bad = mutate(doc, where, op, data.draw(st.sampled_from(WEIRD)))
    out = attempt(JSON_IMP, put(workdir, JSON_IMP, json.dumps(bad, allow_nan=True)))
    if not isinstance(out, CalcError):
        check_run(out)


@FUZZ
@given(data=st.data())
def test_aiperf_csv_one_cell_wrong(workdir: Path, data: st.DataObject) -> None:
    rows = list(csv.reader(io.StringIO(CSV_EXPORT.read_text("utf-8"))))
    cells = [(r, c) for r, row in enumerate(rows) for c in range(len(row))]
    r, c = data.draw(st.sampled_from(cells))
    rows[r][c] = data.draw(st.sampled_from(WEIRD_TEXT))
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    out = attempt(CSV_IMP, put(workdir, CSV_IMP, buf.getvalue()))
    if not isinstance(out, CalcError):
        check_run(out)


@examples(100)
@given(data=st.data(), op=st.sampled_from(["replace", "delete", "sibling"]))
def test_profile_one_leaf_wrong(workdir: Path, profile_path: Path, data: st.DataObject, op: str) -> None:
    doc = tomllib.loads(profile_path.read_text("utf-8"))
    where = data.draw(st.sampled_from(list(nodes(doc))[1:]))
    value = data.draw(st.sampled_from([w for w in WEIRD if w is not None]))  # TOML has no null
    path = put(workdir, PROFILE_IMP, tomli_w.dumps(mutate(doc, where, op, value)))
    out = attempt(PROFILE_IMP, path)
    if isinstance(out, CalcError):
        return
    # accepted: --calibration must still give finite numbers (or a one-line refusal)
    check_evaluates(out.scenario.copy(**{"calibration": str(path)}))
    try:
        with fp_strict():
            totals = kernel_query(calibration=str(path), read_profile=load_profile)
    except CalcError as exc:
        assert "\n" not in exc.message
        return
    assert all(math.isfinite(totals[k].scalar) for k in ("dispatch_us", "combine_us", "total_us"))


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@FUZZ
@given(data=st.data(), op=st.sampled_from(["number", "drop-line", "repeat-line", "junk-line"]))
def test_kernel_log_one_token_wrong(workdir: Path, data: st.DataObject, op: str) -> None:
    lines = SAMPLE_LOG.read_text("utf-8").splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    if op == "number":
        spots = list(_NUMBER.finditer(lines[i])) or [re.search(r"$", lines[i])]
        m = data.draw(st.sampled_from(spots))
        lines[i] = lines[i][: m.start()] + data.draw(st.sampled_from(WEIRD_TEXT)) + lines[i][m.end() :]
    elif op == "drop-line":
        del lines[i]
    elif op == "repeat-line":
        lines.insert(i, lines[i])
    else:
        lines.insert(i, data.draw(st.text(max_size=200)))
    out = attempt(LOG_IMP, put(workdir, LOG_IMP, "\n".join(lines).encode("utf-8", "surrogatepass")))
    if not isinstance(out, CalcError):
        check_log(out)


# ---------------------------------------------------------------------------------------------
# named hostile inputs


def _deep(imp: Importer) -> str:
    depth = 100_000
    if imp is PROFILE_IMP:
        return "a = " + "[" * depth + "]" * depth
    if imp is CSV_IMP:
        return "Metric,avg\n" + '"' + "[" * depth + '"\n'
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_deep_nesting(workdir: Path, imp: Importer) -> None:
    refused(imp, put(workdir, imp, _deep(imp)))


def _with_literal(imp: Importer, valid: bytes, literal: str) -> bytes:
    """A valid file whose one used number is spelt `literal` (in the file's own syntax)."""
    text = valid.decode("utf-8")
    if imp is HF_IMP:
        return re.sub(r'"hidden_size": \d+', f'"hidden_size": {literal}', text, count=1).encode()
    if imp is JSON_IMP:
        doc = json.loads(text)
        doc["inter_token_latency"]["avg"] = "@@"
        return json.dumps(doc).replace('"@@"', literal).encode()
    if imp is PROFILE_IMP:
        return re.sub(r"(\[constants.launch_us\]\nvalue = )\S+", rf"\g<1>{literal}", text).encode()
    if imp is CSV_IMP:
        return re.sub(r"(Inter Token Latency \(ms\),)[^,]+", rf"\g<1>{literal}", text, count=1).encode()
    return re.sub(r"avg_t=[0-9.]+", f"avg_t={literal}", text).encode()  # every rank: no fallback


HUGE = ["1e400", "-1e400", "9" * 5000, "-" + "9" * 5000, "1" + "0" * 400 + ".5"]


@pytest.mark.parametrize("literal", HUGE, ids=["1e400", "-1e400", "int5000", "-int5000", "float400"])
@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_huge_numbers_are_refused(
    workdir: Path, valid: dict[str, bytes], imp: Importer, literal: str
) -> None:
    data = _with_literal(imp, valid[imp.name], literal)
    assert data != valid[imp.name]
    out = attempt(imp, put(workdir, imp, data))
    if imp is LOG_IMP and literal.startswith("-"):
        # "avg_t=-9..." is not a DeepEP timing line at all: the lines are skipped, not misread
        assert isinstance(out, CalcError) or not out.total_us
        return
    assert isinstance(out, CalcError), f"{imp.name} accepted {literal[:12]}"


NON_FINITE = {
    HF_IMP.name: ["NaN", "Infinity", "-Infinity"],
    JSON_IMP.name: ["NaN", "Infinity", "-Infinity"],
    CSV_IMP.name: ["nan", "inf", "-inf"],
    PROFILE_IMP.name: ["nan", "inf", "-inf"],
    LOG_IMP.name: ["nan", "inf"],
}


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_nan_and_infinity_literals(workdir: Path, valid: dict[str, bytes], imp: Importer) -> None:
    for literal in NON_FINITE[imp.name]:
        out = attempt(imp, put(workdir, imp, _with_literal(imp, valid[imp.name], literal)))
        if imp is LOG_IMP and not isinstance(out, CalcError):
            # "avg_t=nan" is not a timing; the dispatch + combine lines then carry no latency
            assert not out.total_us
            check_log(out)
            continue
        assert isinstance(out, CalcError), (imp.name, literal)


def _summary(out: Any) -> Any:
    """What must not change when the same content arrives another way (BOM, symlink)."""
    if isinstance(out, AIPerfRun):  # values only: sources name the file, which differs
        stats = (out.itl_ms, out.per_user_tok_s, out.aggregate_tok_s, out.ttft_p50_ms)
        return [q.value for q in stats if q is not None], out.concurrency, out.model, out.warnings
    if isinstance(out, KernelLog):
        return out.dispatch_us, out.combine_us, out.total_us, out.shape
    if hasattr(out, "constants"):
        return out.constants, out.measured
    return out.as_dict(exclude={"source", "name"})


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_utf8_bom_is_accepted_and_other_encodings_refused(
    workdir: Path, valid: dict[str, bytes], imp: Importer
) -> None:
    plain = attempt(imp, put(workdir, imp, valid[imp.name]))
    bom = attempt(imp, put(workdir, imp, b"\xef\xbb\xbf" + valid[imp.name]))
    assert not isinstance(bom, CalcError), bom
    assert _summary(bom) == _summary(plain)
    refused(imp, put(workdir, imp, valid[imp.name].decode().encode("utf-16")), "UTF-8")
    latin = valid[imp.name].replace(b"\n", b"\n\xb5", 1)
    refused(imp, put(workdir, imp, latin), "UTF-8")


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_empty_and_blank_files(workdir: Path, imp: Importer) -> None:
    for data in (b"", b"  \n\t\n", b"\x00" * 64):
        refused(imp, put(workdir, imp, data))


def forbid_reading(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every way of opening or parsing a file fail: a refusal must come before all of them."""
    calls: list[str] = []

    def forbid(name: str) -> Callable[..., Any]:
        def boom(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"{name} called on an oversized file")

        return boom

    for owner, attr in (
        (builtins, "open"),
        (io, "open"),
        (os, "open"),
        (pathlib.Path, "open"),
        (pathlib.Path, "read_bytes"),
        (pathlib.Path, "read_text"),
        (json, "loads"),
        (tomllib, "loads"),
        (csv, "reader"),
    ):
        monkeypatch.setattr(owner, attr, forbid(f"{getattr(owner, '__name__', owner)}.{attr}"))
    return calls


def sparse(path: Path, size: int = 100 * 2**20) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)  # sparse: nothing is written to disk
    return path


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_100_mb_file_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imp: Importer
) -> None:
    path = sparse(tmp_path / f"huge{imp.suffix}")
    calls = forbid_reading(monkeypatch)
    msg = refused(imp, path, "MB")
    assert calls == [], calls
    assert re.search(r"\b(over|larger than|limit)\b", msg), msg


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_symlinks(workdir: Path, valid: dict[str, bytes], imp: Importer) -> None:
    target = put(workdir, imp, valid[imp.name], "target")
    link = workdir / f"link{next(_names)}{imp.suffix}"
    link.symlink_to(target)
    # followed: the link imports exactly what its target holds
    assert _summary(attempt(imp, link)) == _summary(attempt(imp, target))

    dangling = workdir / f"dangling{next(_names)}{imp.suffix}"
    dangling.symlink_to(workdir / "nowhere.json")
    refused(imp, dangling, "no such file", "symbolic link")

    a, b = workdir / f"loopa{next(_names)}{imp.suffix}", workdir / f"loopb{next(_names)}{imp.suffix}"
    a.symlink_to(b)
    b.symlink_to(a)
    refused(imp, a, "loop")


def test_hugging_face_cache_layout_is_followed(tmp_path: Path) -> None:
    """Why links are followed: a hub cache stores config.json as a link into blobs/."""
    cache = tmp_path / "models--deepseek-ai--DeepSeek-V3"
    blob = cache / "blobs" / "3f2a9c"
    blob.parent.mkdir(parents=True)
    blob.write_bytes((HF / "deepseek-v3" / "config.json").read_bytes())
    snapshot = cache / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(Path("..") / ".." / "blobs" / "3f2a9c")
    spec = load_hf_config(snapshot)
    assert spec.family == "deepseek_v3" and spec.experts == 256
    # a folder whose config.json is itself a folder is refused, not descended into
    odd = tmp_path / "odd"
    (odd / "config.json").mkdir(parents=True)
    refused(HF_IMP, odd, "regular file")


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_directory_where_a_file_is_expected(workdir: Path, imp: Importer) -> None:
    folder = workdir / f"folder{next(_names)}{imp.suffix}"
    folder.mkdir()
    (folder / "unrelated.txt").write_text("hello")
    refused(imp, folder)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_fifo_is_refused_without_blocking(workdir: Path, imp: Importer) -> None:
    fifo = workdir / f"pipe{next(_names)}{imp.suffix}"
    os.mkfifo(fifo)
    outcome: list[Any] = []
    worker = threading.Thread(target=lambda: outcome.append(attempt(imp, fifo)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock the reader so the thread can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail(f"{imp.name} blocked reading a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], CalcError)
    assert "regular file" in outcome[0].message


@pytest.mark.parametrize("imp", IMPORTERS, ids=IDS)
def test_control_characters_in_the_file_name_stay_on_one_line(workdir: Path, imp: Importer) -> None:
    folder = workdir / f"names{next(_names)}"
    folder.mkdir()
    path = folder / f"bad\nname\r\x1b[31m{imp.suffix}"
    path.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(CalcError) as info:
        imp.load(path)
    msg = info.value.message
    assert "\n" not in msg and "\r" not in msg and "\x1b" not in msg, msg
    assert "bad" in msg and "name" in msg


# ---------------------------------------------------------------------------------------------
# the command line: exit 2, one line on stderr, nothing written


def assert_one_line_error(code: int, out: str, err: str, name: str) -> None:
    assert code == 2, (code, err)
    assert out == ""
    assert err.startswith("deepep-calc: error: ") and err.count("\n") == 1, err
    assert name in err and "Traceback" not in err


def _bad_inputs(folder: Path, valid: bytes, imp: Importer) -> list[Path]:
    bad = [
        put(folder, imp, valid[:150], "truncated"),
        put(folder, imp, _deep(imp), "deep"),
        put(folder, imp, b"\xff\xfe\x00garbage", "binary"),
    ]
    return [*bad, sparse(folder / f"huge{imp.suffix}")]


def test_cli_evaluate_with_a_bad_config_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, valid: dict[str, bytes]
) -> None:
    for path in _bad_inputs(tmp_path, valid[HF_IMP.name], HF_IMP):
        assert_one_line_error(*run_cli(capsys, "evaluate", "--model", path, "--json"), path.name)


def test_cli_evaluate_and_kernel_with_a_bad_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, valid: dict[str, bytes]
) -> None:
    for path in _bad_inputs(tmp_path, valid[PROFILE_IMP.name], PROFILE_IMP):
        assert_one_line_error(*run_cli(capsys, "evaluate", "--calibration", path), path.name)
        assert_one_line_error(*run_cli(capsys, "kernel", "--calibration", path, "--json"), path.name)


@pytest.mark.parametrize("role", ["--deepep", "--dense", "--kernel-log"])
def test_cli_calibrate_refuses_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    valid: dict[str, bytes],
    role: str,
) -> None:
    imp = LOG_IMP if role == "--kernel-log" else JSON_IMP
    inputs = tmp_path_factory.mktemp("inputs")
    for path in _bad_inputs(inputs, valid[imp.name], imp):
        outdir = tmp_path_factory.mktemp("out")
        out = outdir / "out.toml"
        args = {"--dense": TRT_DENSE, "--deepep": TRT_DEEPEP, role: path}
        argv = [x for pair in args.items() for x in pair]
        assert_one_line_error(*run_cli(capsys, "calibrate", *argv, "-o", out), path.name)
        assert not out.exists()
        assert list(outdir.iterdir()) == []  # no temporary file left behind


# The parts of an export the calibration reads; mutating these reaches the pairing and the fit.
USED = {
    "inter_token_latency",
    "output_token_throughput_per_user",
    "output_token_throughput",
    "time_to_first_token",
    "output_sequence_length",
    "input_sequence_length",
    "request_count",
    "error_request_count",
    "input_config",
    "was_cancelled",
}
NUMBERS = [0, -1, 1e-300, 1e-9, 0.5, 1e11, 1e12, 1e13, 2**53, math.nan, math.inf, "7", None]


@pytest.mark.slow
@examples(60)
@given(data=st.data(), op=st.sampled_from(["replace", "delete"]), side=st.sampled_from(["dense", "deepep"]))
def test_cli_calibrate_on_a_mutated_export(
    capsys: pytest.CaptureFixture[str], workdir: Path, data: st.DataObject, op: str, side: str
) -> None:
    """The whole pipeline (import, pair, fit, write) on one wrong leaf: a profile or exit 2."""
    source = TRT_DEEPEP if side == "deepep" else TRT_DENSE
    doc = _read_json(source)
    where = data.draw(st.sampled_from([n for n in nodes(doc) if n and n[0] in USED]))
    bad = mutate(doc, where, op, data.draw(st.sampled_from(NUMBERS + WEIRD)))
    folder = workdir / f"pipeline{next(_names)}"
    folder.mkdir()
    export = folder / source.name
    export.write_text(json.dumps(bad, allow_nan=True), "utf-8")
    out = folder / "out" / "p.toml"
    out.parent.mkdir()
    pair = {"dense": TRT_DENSE, "deepep": TRT_DEEPEP, side: export}
    code, stdout, err = run_cli(
        capsys, "calibrate", "--dense", pair["dense"], "--deepep", pair["deepep"], "-o", out, "--json"
    )
    if code == 0:
        summary = json.loads(stdout)
        assert summary["profile"] == str(out)
        check_evaluates(load_profile(out).scenario.copy(**{"calibration": str(out)}))
        return
    assert code == 2, err
    assert stdout == "" and err.startswith("deepep-calc: error: ") and err.count("\n") == 1, err
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize(
    ("tag", "stat", "value"),
    [
        ("output_token_throughput_per_user", "avg", 0),  # was ZeroDivisionError in the A/B
        ("inter_token_latency", "avg", 0),
        ("inter_token_latency", "avg", -5),  # was written to the profile as a measured step
        ("inter_token_latency", "std", 1e200),  # was an infinite tax spread in the profile
        ("output_token_throughput", "avg", 0),
    ],
)
def test_cli_calibrate_refuses_impossible_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tag: str, stat: str, value: float
) -> None:
    doc = _read_json(TRT_DEEPEP)
    doc[tag][stat] = value
    export = tmp_path / TRT_DEEPEP.name
    export.write_text(json.dumps(doc), "utf-8")
    out = tmp_path / "out.toml"
    code, stdout, err = run_cli(capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", export, "-o", out)
    assert_one_line_error(code, stdout, err, export.name)
    assert tag in err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [export.name]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ((r'(\[constants.proxy_lane_us\]\nvalue = \S+\nunit = )"us"', r'\g<1>""'), "proxy_lane_us"),
        ((r"(\[constants.launch_us\]\nvalue = )\S+", r"\g<1>-3.0"), "launch_us"),
        ((r'(\[kernel.dispatch_alpha_us\]\nvalue = \S+\nunit = )"us"', r'\g<1>"ms"'), "dispatch_alpha_us"),
        (
            (r"(\[cells.allgather\]\naggregate_tok_s = )\S+", r"\g<1>5e-324"),
            "cells.0.allgather.aggregate_tok_s",
        ),
        ((r"(\[constants.ttft_steps\]\nvalue = )\S+", r'\g<1>"NaN"'), "ttft_steps"),
    ],
    ids=["unit-blank", "negative", "unit-ms", "tiny-cell-metric", "nan-as-text"],
)
def test_profile_constants_keep_unit_and_sign(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profile_path: Path, edit: tuple[str, str], needle: str
) -> None:
    """Hand edits that crashed or overflowed `--calibration` are one-line refusals now.

    A blank unit met "us" in Q arithmetic (ValueError), 1000 / 5e-324 is inf, and pydantic read
    the text "NaN" as a float nan.
    """
    text, n = re.subn(*edit, profile_path.read_text("utf-8"))
    assert n == 1
    path = tmp_path / "edited.toml"
    path.write_text(text, "utf-8")
    assert needle in refused(PROFILE_IMP, path, "not a valid calibration profile")
    assert_one_line_error(*run_cli(capsys, "evaluate", "--calibration", path), path.name)


def test_profile_rewritten_in_the_same_tick_is_read_again(tmp_path: Path, profile_path: Path) -> None:
    """The profile cache was keyed by mtime and size: an edit of the same size inside one
    timestamp tick served the old profile. It is keyed by content now."""
    path = tmp_path / "same.toml"
    text = profile_path.read_text("utf-8")
    path.write_text(text, "utf-8")
    before = os.stat(path)
    first = load_profile(path).constants.launch_us.value
    edited, n = re.subn(
        r"(\[constants.launch_us\]\nvalue = )(\d)", lambda m: m[1] + str((int(m[2]) + 1) % 10), text
    )
    assert n == 1 and len(edited) == len(text)
    path.write_text(edited, "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert load_profile(path).constants.launch_us.value != first
