"""Mutation testing of the core with cosmic-ray: the kill rate per module, in bounded time.

    python benchmarks/mutation.py                     # every module of TARGETS, default caps
    python benchmarks/mutation.py quantity compute    # some modules
    python benchmarks/mutation.py --cap 0 --budget 3600 --survivors survivors.md

Why this script: cosmic-ray (8.x, `pip install -e '.[mutation]'`) mutates one occurrence of one
operator in a module, runs a test command and records killed / survived in a session database.
Its own `exec` runs one test process per mutant, and a fresh Python with pytest, NumPy and
pydantic costs ~2 s here, most of a mutant's time. So each worker keeps a small fork server that
has imported those libraries (never `deepep_calc`: the mutated module must be imported fresh)
and forks one pytest per mutant; cosmic-ray's test command is a thin client of that server.
Everything else is cosmic-ray's: operators, mutation, session, outcome.

Bounded time: each module's mutants are capped (`--cap`, a deterministic sample: the mutants
whose hash of file, operator and occurrence sort first, so two runs of the same code test the
same mutants), each module runs only its own targeted tests (`TARGETS`), and the whole run
stops at `--budget` seconds (mutants not reached are reported as not run, never as killed).

Scope and operators (docs/testing.md says why): the functions listed per module, and
cosmic-ray's core operators except those that can only crash or only be equivalent here —
arithmetic turned bitwise or shift (a TypeError on floats at the first call), comparisons turned
identity tests (`==` into `is` on small ints and None is the same test), and decorator removal
(a crash at import for dataclasses and properties, a no-op for `lru_cache`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    """One module under mutation: which functions (None: all of it) and which tests kill them."""

    name: str
    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] | None = None


# The module table. To add a module, add one row.
TARGETS: tuple[Target, ...] = (
    Target("quantity", "src/deepep_calc/base/quantity.py", ("tests/base/test_quantity.py",)),
    Target("params", "src/deepep_calc/physics/params.py", ("tests/physics/test_params.py",)),
    Target("compute", "src/deepep_calc/physics/compute.py", ("tests/physics/test_compute.py",)),
    Target("deepep", "src/deepep_calc/physics/deepep.py", ("tests/physics/test_deepep.py",)),
    Target("collectives", "src/deepep_calc/physics/collectives.py", ("tests/physics/test_collectives.py",)),
    Target("memory", "src/deepep_calc/physics/memory.py", ("tests/physics/test_memory.py",)),
    Target("step", "src/deepep_calc/physics/step.py", ("tests/physics/test_step.py",)),
    Target("serving", "src/deepep_calc/physics/serving.py", ("tests/physics/test_serving.py",)),
    Target(
        "cells",
        "src/deepep_calc/estimate/cells.py",
        ("tests/estimate/test_cells.py",),
        ("measured_cell_for", "_is_cell_scenario", "_same_batching", "_native_dtype", "apply_cell"),
    ),
    Target(
        "aiperf-metrics",
        "src/deepep_calc/io/aiperf/metrics.py",
        ("tests/io/aiperf/test_metrics.py",),
        ("number", "block", "stat", "_check_range", "count", "metric", "csv_tag", "csv_cell"),
    ),
    Target(
        "verdict",
        "src/deepep_calc/decide/verdict.py",
        (
            "tests/decide/test_verdict.py",
            "tests/decide/test_verdict_deciding.py",
            "tests/properties/test_verdict_oracle.py",
        ),
        (
            "_meets",
            "decision_aggregates",
            "assess",
            "classify_codes",
            "classify",
            "status_of",
            "compare",
            "band_crosses",
        ),
    ),
)

SKIP_TARGET_OPS = ("BitAnd", "BitOr", "BitXor", "LShift", "RShift")
IDENTITY = ("Is", "IsNot")


def operator_kept(name: str) -> bool:
    """Whether a cosmic-ray operator name yields a mutant worth running (see the module doc)."""
    op = name.split("/")[-1]
    if op == "RemoveDecorator":
        return False
    parts = op.split("_")
    if op.startswith("ReplaceBinaryOperator_"):
        src, dst = parts[1], parts[2]
        return src in SKIP_TARGET_OPS or dst not in SKIP_TARGET_OPS
    if op.startswith("ReplaceComparisonOperator_"):
        src, dst = parts[1], parts[2]
        return (src in IDENTITY) == (dst in IDENTITY)
    return True


def function_spans(path: Path, names: Sequence[str]) -> list[tuple[int, int]]:
    """Line spans of the named functions and methods (the mutation scope of a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    missing = set(names) - {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    if missing:
        raise SystemExit(f"{path}: no function named {', '.join(sorted(missing))}")
    return spans


def inert_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of code that never runs as written: annotations (postponed by
    `from __future__ import annotations`) and decorator lines (`lru_cache(maxsize=...)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            nodes += [*node.decorator_list, *([node.returns] if node.returns else [])]
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    nodes.append(arg.annotation)
        elif isinstance(node, ast.ClassDef):
            nodes += node.decorator_list
        elif isinstance(node, ast.AnnAssign):
            nodes.append(node.annotation)
    return [
        ((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0))
        for n in nodes
        if hasattr(n, "lineno")
    ]


def _key(item: Any) -> str:
    m = item.mutations[0]
    text = f"{Path(m.module_path).as_posix()}:{m.operator_name}:{m.occurrence}"
    return hashlib.sha256(text.encode()).hexdigest()


def plan(target: Target, session: Path, cap: int) -> dict[str, int]:
    """Create the cosmic-ray session of one module and mark what is out of scope as skipped."""
    from cosmic_ray.commands import init
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = function_spans(ROOT / target.path, target.functions) if target.functions else None
    inert = inert_spans(ROOT / target.path)
    with use_db(str(session), WorkDB.Mode.create) as db:
        init([Path(target.path)], db, {})
        in_scope = []
        skipped = []
        for item in db.work_items:
            m = item.mutations[0]
            line = m.start_pos[0]
            pos = tuple(m.start_pos)
            ok = (
                operator_kept(m.operator_name)
                and (spans is None or any(a <= line <= b for a, b in spans))
                and not any(a <= pos < b for a, b in inert)
            )
            (in_scope if ok else skipped).append(item)
        in_scope.sort(key=_key)
        sampled = in_scope if cap <= 0 else in_scope[:cap]
        skipped += in_scope[len(sampled) :]
        if skipped:
            db.set_multiple_results(
                [i.job_id for i in skipped], WorkResult(worker_outcome=WorkerOutcome.SKIPPED)
            )
    return {"in_scope": len(in_scope), "sampled": len(sampled)}


# The fork server ------------------------------------------------------------------------------


def serve(sock_path: str) -> None:
    """Fork one pytest per request; the parent has pytest, NumPy and pydantic imported already."""
    sys.dont_write_bytecode = True
    import numpy  # noqa: F401
    import pydantic  # noqa: F401
    import pytest

    with contextlib.suppress(ImportError):
        import hypothesis  # noqa: F401
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(4)
    while True:
        conn, _ = server.accept()
        with conn:
            request = json.loads(_read_line(conn))
            if request.get("stop"):
                return
            fd, log = tempfile.mkstemp(prefix="mutant-", suffix=".log")
            pid = os.fork()
            if pid == 0:  # child: one pytest run over the mutated file on disk
                server.close()
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                signal.alarm(int(request["timeout"]))
                code = pytest.main([*request["args"]])
                os._exit(int(code))
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            os.close(fd)
            tail = Path(log).read_text(errors="replace")[-2000:]
            os.unlink(log)
            with contextlib.suppress(OSError):  # the client was stopped (the budget ran out)
                conn.sendall((json.dumps({"code": code, "tail": tail}) + "\n").encode())


def _read_line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


def client(sock_path: str, timeout: float, args: list[str]) -> int:
    """cosmic-ray's test command: ask the worker's fork server for one pytest run."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock_path)
    conn.sendall((json.dumps({"args": args, "timeout": timeout}) + "\n").encode())
    reply = json.loads(_read_line(conn))
    sys.stdout.write(reply["tail"])
    return int(reply["code"] != 0)


PYTEST_ARGS = ["-x", "-q", "-p", "no:cacheprovider", "--noconftest", "-W", "ignore"]


@dataclass
class Worker:
    """A private copy of the tree (cosmic-ray mutates files in place) and its fork server."""

    home: Path
    proc: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def sock(self) -> str:
        return str(self.home / "fork.sock")

    def start(self) -> None:
        for part in ("src", "tests", "docs"):  # docs: tests that hold a document to the code
            shutil.copytree(ROOT / part, self.home / part, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(ROOT / "pyproject.toml", self.home / "pyproject.toml")
        self.env = {
            **os.environ,
            "PYTHONPATH": str(self.home / "src"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "_serve", self.sock],
            cwd=self.home,
            env=self.env,
            start_new_session=True,
        )
        for _ in range(600):
            if os.path.exists(self.sock):
                return
            time.sleep(0.05)
        raise SystemExit(f"fork server in {self.home} did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(self.sock)
                conn.sendall(b'{"stop": true}\n')
                conn.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)


class Budget:
    """The run's wall-clock deadline; SIGINT or SIGTERM end it early, and cleanly."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def over(self) -> bool:
        return time.monotonic() > self.deadline

    def end(self, *_: Any) -> None:
        self.deadline = 0.0


@dataclass
class Outcome:
    target: Target
    in_scope: int = 0
    sampled: int = 0
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    not_run: int = 0
    seconds: float = 0.0
    survivors: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    @property
    def rate(self) -> float | None:
        ran = self.killed + self.survived
        return self.killed / ran if ran else None


def run_target(
    w: Worker,
    target: Target,
    *,
    cap: int,
    timeout: float,
    budget: Budget,
    sessions: Path,
    override_tests: Sequence[str] = (),
) -> Outcome:
    """Plan, check the unmutated tests pass, execute with cosmic-ray until the deadline, read back."""
    out = Outcome(target)
    started = time.monotonic()
    session = sessions / f"{target.name}.sqlite"
    counts = plan(target, session, cap)
    out.in_scope, out.sampled = counts["in_scope"], counts["sampled"]
    if budget.over():
        out.not_run = out.sampled
        return out
    tests = override_tests or target.tests
    client_cmd = [sys.executable, __file__, "_client", w.sock, str(timeout), "--", *PYTEST_ARGS]
    client_cmd += tests
    clean = subprocess.run(client_cmd, cwd=w.home, env=w.env, capture_output=True, text=True)
    if clean.returncode != 0:
        out.error = f"the unmutated tests fail:\n{clean.stdout[-1500:]}"
        return out
    config = sessions / f"{target.name}.toml"
    command = " ".join(_quote(a) for a in client_cmd)
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(target.path)}\n"
        f"timeout = {timeout + 30}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(command)}\n"
        '[cosmic-ray.distributor]\nname = "local"\n',
        encoding="utf-8",
    )
    cosmic = Path(sys.executable).with_name("cosmic-ray")
    proc = subprocess.Popen(
        [str(cosmic), "exec", str(config), str(session)],
        cwd=w.home,
        env=w.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    while proc.poll() is None:
        if budget.over():
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            break
        time.sleep(0.5)
    # a mutant interrupted mid-write is put back by copying the file again
    shutil.copy2(ROOT / target.path, w.home / target.path)
    _read_results(session, out)
    out.seconds = time.monotonic() - started
    return out


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _read_results(session: Path, out: Outcome) -> None:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        done = {item.job_id for item, _ in db.completed_work_items}
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            if result.worker_outcome in (WorkerOutcome.NO_TEST,):
                continue
            if result.test_outcome == TestOutcome.SURVIVED:
                out.survived += 1
                m = item.mutations[0]
                out.survivors.append(
                    {
                        "line": m.start_pos[0],
                        "operator": m.operator_name.split("/")[-1],
                        "occurrence": m.occurrence,
                        "function": m.definition_name,
                        "diff": _short_diff(result.diff or ""),
                    }
                )
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                out.incompetent += 1
            else:
                out.killed += 1
        out.not_run = sum(1 for item in db.work_items if item.job_id not in done)
    out.survivors.sort(key=lambda s: (s["line"], s["operator"]))


def _short_diff(diff: str) -> str:
    lines = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("---", "+++"))]
    return " / ".join(ln.strip() for ln in lines[:2])


def _chosen(names: Sequence[str]) -> list[Target]:
    if not names:
        return list(TARGETS)
    by_name = {t.name: t for t in TARGETS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown module {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def _rows(outcomes: Sequence[Outcome]) -> Iterator[str]:
    yield (
        f"{'module':<16}{'in scope':>9}{'run':>6}{'killed':>8}{'survived':>9}{'not run':>8}"
        f"{'kill rate':>10}{'s':>6}"
    )
    for o in outcomes:
        rate = "error" if o.error else ("-" if o.rate is None else f"{o.rate:.1%}")
        ran = o.killed + o.survived + o.incompetent
        yield (
            f"{o.target.name:<16}{o.in_scope:>9}{ran:>6}{o.killed:>8}{o.survived:>9}{o.not_run:>8}"
            f"{rate:>10}{o.seconds:>6.0f}"
        )


def write_survivors(path: Path, outcomes: Sequence[Outcome]) -> None:
    lines = ["# Surviving mutants", ""]
    for o in outcomes:
        if not o.survivors:
            continue
        lines += [f"## {o.target.name} (`{o.target.path}`)", ""]
        for s in o.survivors:
            lines.append(f"- line {s['line']} `{s['function']}` {s['operator']}: `{s['diff']}`")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["_serve"]:
        serve(args[1])
        return 0
    if args[:1] == ["_client"]:
        rest = args[args.index("--") + 1 :]
        return client(args[1], float(args[2]), rest)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", help="names from TARGETS (default: all)")
    p.add_argument("--cap", type=int, default=150, help="mutants per module, deterministic sample (0: all)")
    p.add_argument("--budget", type=float, default=1500.0, help="wall-clock seconds for the whole run")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds one mutant's tests may take")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel workers")
    p.add_argument("--survivors", type=Path, help="write the surviving mutants to this Markdown file")
    p.add_argument("--tests", nargs="+", default=[], help="test files to run instead of the table's")
    p.add_argument("--fail-under", type=float, default=0.0, help="exit 1 if a module's kill rate is below")
    opts = p.parse_args(args)
    targets = _chosen(opts.modules)
    started = time.monotonic()
    budget = Budget(opts.budget)
    signal.signal(signal.SIGINT, budget.end)
    signal.signal(signal.SIGTERM, budget.end)
    home = Path(tempfile.mkdtemp(prefix="deepep-mutation-"))
    sessions = home / "sessions"
    sessions.mkdir()
    workers = [Worker(home / f"w{i}") for i in range(max(1, opts.jobs))]
    outcomes: dict[str, Outcome] = {}
    queue = list(targets)
    lock = threading.Lock()

    def work(w: Worker) -> None:
        w.start()
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    t = queue.pop(0)
                o = run_target(
                    w,
                    t,
                    cap=opts.cap,
                    timeout=opts.timeout,
                    budget=budget,
                    sessions=sessions,
                    override_tests=opts.tests,
                )
                with lock:
                    outcomes[t.name] = o
                    print(list(_rows([o]))[1], flush=True)
        finally:
            w.stop()

    try:
        print(next(_rows([])), flush=True)
        threads = [threading.Thread(target=work, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    ordered = [outcomes[t.name] for t in targets if t.name in outcomes]
    print()
    for row in _rows(ordered):
        print(row)
    print(f"\n{time.monotonic() - started:.0f} s wall clock, {len(workers)} workers")
    for o in ordered:
        if o.error:
            print(f"{o.target.name}: {o.error}")
    if opts.survivors:
        write_survivors(opts.survivors, ordered)
    low = [o for o in ordered if o.error or (o.rate is not None and o.rate * 100 < opts.fail_under)]
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
