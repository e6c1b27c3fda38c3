"""Load test of `deepep-calc serve`: N concurrent clients on /api/evaluate, valid and invalid mixed.

Starts `deepep-calc serve` itself on 127.0.0.1 (a free port; nothing else is contacted), then
drives it for a bounded time and a bounded number of requests from N keep-alive HTTP/1.1
connections written with asyncio streams (a heavy client would share the 2 CPUs with the
server and measure itself). Each client loops without think time, so this is the server at
saturation: by Little's law a request's latency is about clients / throughput.

The mix (per request, seeded per client):
  valid     a scenario from a pool of varied models, instances, transports, nodes and
            concurrencies (checked to evaluate before the run); the server's cache holds it
            after the first time, as it does for a page someone is editing
  cold      a valid scenario never asked before (fresh ISL): the model runs every time and the
            caches keep evicting, which is what would show a leak
  invalid   unknown preset or a path as model, negative concurrency, a body over the size
            limit (Content-Length declared; the headers are sent, the refusal read), wrong
            content type, malformed JSON: each must get its 4xx, never a 5xx

Reported: requests, rate, status histogram per kind, p50/p95/p99 latency of the valid
requests, server CPU, and the server's RSS (VmRSS from /proc every second): first, last, max
and the slope of a least-squares line over the second half of the run. Exits 1 when a target
is missed: any 5xx, any broken connection, an unexpected status, p99 >= --p99-ms, or an RSS
slope >= --max-slope MB/min.

`--prime` first asks every pool scenario once (not measured), so `valid` is what it says: a
scenario the server has answered before. Without it, a pool the warm-up has not covered is
mostly first answers, and the run measures the model's cold cost more than the server.

Usage: .venv/bin/python benchmarks/load_test.py [--seconds 60] [--clients 50] [--warmup 0] [--prime]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGET_P99_MS = 200.0
MAX_SLOPE_MB_PER_MIN = 1.0
MAX_REQUESTS = 1_000_000
REQUEST_TIMEOUT_S = 10.0
OVERSIZED = 300 * 1024  # over the API's 256 KB limit

POOL_MODELS = ["deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "qwen3-30b-a3b-fp8", "gpt-oss-120b", "dbrx"]
POOL_PLACES = [("p5en", "efa-proxy"), ("p5en", "efa-gda"), ("p5", "efa-nvshmem"), ("ib-h800", "ib-ibgda")]
POOL_NODES = [1, 2, 4]
POOL_CONCURRENCY = [1, 8, 32, 128, 512]

# kind -> (share of requests, expected status)
MIX: dict[str, tuple[float, int]] = {
    "valid": (0.70, 200),
    "cold": (0.10, 200),
    "bad-preset": (0.04, 422),
    "negative": (0.04, 422),
    "oversized": (0.04, 413),
    "wrong-type": (0.04, 415),
    "malformed": (0.04, 422),
}
VALID_KINDS = ("valid", "cold")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def valid_pool() -> list[dict[str, Any]]:
    """Scenarios the model answers (a transport offered on the instance, etc.), checked in-process."""
    from deepep_calc.api import evaluate
    from deepep_calc.base.errors import CalcError
    from deepep_calc.question.scenario import Scenario

    pool = []
    for model in POOL_MODELS:
        for instance, transport in POOL_PLACES:
            for nodes in POOL_NODES:
                for concurrency in POOL_CONCURRENCY:
                    body = {
                        "model": model,
                        "instance": instance,
                        "transport": transport,
                        "nodes": nodes,
                        "concurrency": concurrency,
                    }
                    try:
                        evaluate(Scenario(**body))
                    except CalcError:
                        continue
                    pool.append(body)
    return pool


def http_post(port: int, body: bytes, ctype: bytes = b"application/json", length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return (
        b"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Content-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (port, ctype, n, body)
    )


class Requests:
    """Builds each request of the mix; `cold` bodies are numbered so none repeats."""

    def __init__(self, port: int, pool: list[dict[str, Any]]) -> None:
        self.port = port
        self.pool = [json.dumps(b).encode() for b in pool]
        self.kinds = list(MIX)
        self.weights = [share for share, _ in MIX.values()]
        self.fresh = 0

    def pick(self, rng: random.Random) -> tuple[str, bytes]:
        kind = rng.choices(self.kinds, self.weights)[0]
        port = self.port
        if kind == "valid":
            return kind, http_post(port, rng.choice(self.pool))
        if kind == "cold":
            self.fresh += 1
            body = {"model": "deepseek-v3", "nodes": 4, "isl": 1000 + self.fresh, "concurrency": 64}
            return kind, http_post(port, json.dumps(body).encode())
        if kind == "bad-preset":
            model = rng.choice(["no-such-model", "../../etc/passwd", "/etc/passwd", "file:///etc/passwd"])
            return kind, http_post(port, json.dumps({"model": model}).encode())
        if kind == "negative":
            return kind, http_post(port, json.dumps({"concurrency": -rng.randint(1, 1000)}).encode())
        if kind == "oversized":  # declared over the limit: refused on the headers, body never sent
            return kind, http_post(port, b"", length=OVERSIZED)
        if kind == "wrong-type":
            return kind, http_post(port, b'{"nodes": 2}', ctype=b"text/plain")
        return kind, http_post(port, b'{"model": "deepseek-v3", "nodes": ')


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bool]:
    """Send one request, read its whole response: (status, server closes the connection)."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length, close = None, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and value.strip().lower() == b"close":
            close = True
    if length is None:
        await reader.read()
        close = True
    else:
        await reader.readexactly(length)
    return status, close


@dataclass
class Tally:
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    broken: Counter[str] = field(default_factory=Counter)
    sent: int = 0


async def drive(
    port: int, clients: int, seconds: float, max_requests: int, pool: list[dict[str, Any]]
) -> Tally:
    tally = Tally()
    requests = Requests(port, pool)
    stop_at = time.monotonic() + seconds

    async def client(index: int) -> None:
        rng = random.Random(1000 + index)
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while time.monotonic() < stop_at and tally.sent < max_requests:
            tally.sent += 1
            kind, request = requests.pick(rng)
            try:
                if conn is None:
                    conn = await asyncio.wait_for(
                        asyncio.open_connection("127.0.0.1", port), REQUEST_TIMEOUT_S
                    )
                t0 = time.perf_counter()
                status, close = await asyncio.wait_for(exchange(*conn, request), REQUEST_TIMEOUT_S)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as err:
                tally.broken[f"{kind}: {type(err).__name__}"] += 1
                if conn is not None:
                    conn[1].close()
                conn = None
                continue
            tally.latencies[kind].append((time.perf_counter() - t0) * 1000.0)
            tally.statuses[kind][status] += 1
            if close:
                conn[1].close()
                conn = None
        if conn is not None:
            conn[1].close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    return tally


async def prime(port: int, clients: int, pool: list[dict[str, Any]]) -> int:
    """Ask every pool scenario once, spread over the clients: the state of a server whose
    pages have each been opened, which the `valid` kind assumes. Returns the answers that were
    200 (a pool scenario is valid by construction)."""
    bodies = [http_post(port, json.dumps(b).encode()) for b in pool]
    ok = 0

    async def client(share: list[bytes]) -> None:
        nonlocal ok
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for request in share:
                status, close = await asyncio.wait_for(exchange(reader, writer, request), 60.0)
                ok += status == 200
                if close:
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
        finally:
            writer.close()

    await asyncio.gather(*(client(bodies[i::clients]) for i in range(clients)))
    return ok


def process_tree(pid: int) -> list[int]:
    """The server and its children (uvicorn workers, if any)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in task.read_text().split()]
    return found


def rss_mb(pid: int) -> float:
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


class RssSampler(threading.Thread):
    """VmRSS of the server every second, in its own thread so a busy event loop does not skew it."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.halt = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.halt.is_set():
            self.samples.append((time.monotonic() - self.t0, rss_mb(self.pid)))
            self.halt.wait(1.0)


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of RSS over the second half of the run (after caches filled)."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0
    n = len(half)
    mt = sum(t for t, _ in half) / n
    mr = sum(r for _, r in half) / n
    var = sum((t - mt) ** 2 for t, _ in half)
    return 0.0 if var == 0 else 60.0 * sum((t - mt) * (r - mr) for t, r in half) / var


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: p99 is a latency some request really had)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def start_server(port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "deepep_calc.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    probe = b"GET /api/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
                s.sendall(probe)
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("server did not start")


def stop_server(proc: subprocess.Popen[bytes]) -> tuple[int | None, str]:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return proc.returncode, err


def summarise(
    tally: Tally, elapsed: float, samples: list[tuple[float, float]], cpu_s: float, args: argparse.Namespace
) -> dict[str, Any]:
    histogram: Counter[int] = Counter()
    for counts in tally.statuses.values():
        histogram.update(counts)
    unexpected = {
        kind: {str(s): n for s, n in counts.items() if s != MIX[kind][1]}
        for kind, counts in tally.statuses.items()
        if any(s != MIX[kind][1] for s in counts)
    }
    valid = [ms for kind in VALID_KINDS for ms in tally.latencies[kind]]
    answered = sum(histogram.values())
    rss = [r for _, r in samples]
    return {
        "clients": args.clients,
        "seconds": round(elapsed, 2),
        "requests": answered,
        "rate_per_s": round(answered / elapsed, 1) if elapsed else 0.0,
        "status_histogram": {str(s): n for s, n in sorted(histogram.items())},
        "by_kind": {k: {str(s): n for s, n in sorted(c.items())} for k, c in sorted(tally.statuses.items())},
        "server_errors_5xx": sum(n for s, n in histogram.items() if s >= 500),
        "unexpected_statuses": unexpected,
        "broken_connections": dict(tally.broken),
        "valid_requests": len(valid),
        "latency_ms_valid": {f"p{q}": round(percentile(valid, q), 2) for q in (50, 95, 99)},
        "latency_ms_by_kind": {
            k: {f"p{q}": round(percentile(v, q), 2) for q in (50, 99)}
            for k, v in sorted(tally.latencies.items())
        },
        "server_cpu_pct_of_one_core": round(100.0 * cpu_s / elapsed, 1) if elapsed else 0.0,
        "rss_mb": {
            "first": round(rss[0], 1) if rss else None,
            "mid": round(rss[len(rss) // 2], 1) if rss else None,
            "last": round(rss[-1], 1) if rss else None,
            "max": round(max(rss), 1) if rss else None,
            "slope_mb_per_min_second_half": round(slope_mb_per_min(samples), 3),
            "samples": len(rss),
        },
        "targets": {"p99_ms": args.p99_ms, "max_slope_mb_per_min": args.max_slope},
    }


def misses(report: dict[str, Any]) -> list[str]:
    out = []
    if report["server_errors_5xx"]:
        out.append(f"{report['server_errors_5xx']} responses were 5xx")
    if report["broken_connections"]:
        out.append(f"broken connections: {report['broken_connections']}")
    if report["unexpected_statuses"]:
        out.append(f"unexpected statuses: {report['unexpected_statuses']}")
    p99 = report["latency_ms_valid"]["p99"]
    if not p99 < report["targets"]["p99_ms"]:
        out.append(f"p99 {p99} ms is not under {report['targets']['p99_ms']} ms")
    slope = report["rss_mb"]["slope_mb_per_min_second_half"]
    if not slope < report["targets"]["max_slope_mb_per_min"]:
        out.append(f"RSS grows {slope} MB/min (limit {report['targets']['max_slope_mb_per_min']})")
    return out


def print_report(r: dict[str, Any]) -> None:
    lat, rss = r["latency_ms_valid"], r["rss_mb"]
    print(f"{r['clients']} clients, {r['seconds']} s: {r['requests']:,} requests ({r['rate_per_s']:,} req/s)")
    print(f"  statuses: {r['status_histogram']}   5xx: {r['server_errors_5xx']}")
    for kind, counts in r["by_kind"].items():
        print(f"    {kind:<11} {counts}   latency {r['latency_ms_by_kind'].get(kind)}")
    print(
        f"  broken connections: {r['broken_connections'] or 0}   unexpected: {r['unexpected_statuses'] or 0}"
    )
    print(
        f"  valid ({r['valid_requests']:,}): p50 {lat['p50']} ms  p95 {lat['p95']} ms  p99 {lat['p99']} ms"
        f"   (target p99 < {r['targets']['p99_ms']:g} ms)"
    )
    print(f"  server CPU: {r['server_cpu_pct_of_one_core']}% of one core")
    print(
        f"  server RSS: first {rss['first']} MB, last {rss['last']} MB, max {rss['max']} MB;"
        f" slope over the second half {rss['slope_mb_per_min_second_half']} MB/min"
        f" (limit {r['targets']['max_slope_mb_per_min']:g})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds of the same load first, not measured")
    ap.add_argument(
        "--prime", action="store_true", help="ask every pool scenario once before the warm-up, not measured"
    )
    ap.add_argument("--max-requests", type=int, default=MAX_REQUESTS, help="stop after this many")
    ap.add_argument("--p99-ms", type=float, default=TARGET_P99_MS, help="p99 target for valid requests")
    ap.add_argument("--max-slope", type=float, default=MAX_SLOPE_MB_PER_MIN, help="RSS slope limit, MB/min")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    if not (0 < args.seconds <= 600 and 0 <= args.warmup <= 600 and 0 < args.clients <= 500):
        ap.error("--seconds must be in (0, 600], --warmup in [0, 600], --clients in (0, 500]")
    if not 0 < args.max_requests <= MAX_REQUESTS:
        ap.error(f"--max-requests must be in (0, {MAX_REQUESTS:,}]")

    pool = valid_pool()
    port = free_port()
    proc = start_server(port)
    try:
        wait_ready(port, proc)
        print(f"deepep-calc serve on 127.0.0.1:{port} (pid {proc.pid}); {len(pool)} scenarios in the pool")
        if args.prime:
            t_prime = time.perf_counter()
            answered = asyncio.run(prime(port, args.clients, pool))
            took = time.perf_counter() - t_prime
            print(f"primed: {answered:,} of {len(pool):,} pool scenarios in {took:.1f} s")
        if args.warmup:
            warm = asyncio.run(drive(port, args.clients, args.warmup, args.max_requests, pool))
            print(f"warm-up: {sum(sum(c.values()) for c in warm.statuses.values()):,} requests, not counted")
        sampler = RssSampler(proc.pid)
        cpu0 = cpu_seconds(proc.pid)
        sampler.start()
        t0 = time.perf_counter()
        tally = asyncio.run(drive(port, args.clients, args.seconds, args.max_requests, pool))
        elapsed = time.perf_counter() - t0
        cpu_s = cpu_seconds(proc.pid) - cpu0
        sampler.halt.set()
        sampler.join()
        alive = proc.poll() is None
    finally:
        code, stderr = stop_server(proc)
    report = summarise(tally, elapsed, sampler.samples, cpu_s, args)
    report["server_exit_code"] = code
    report["server_stderr_has_traceback"] = "Traceback" in stderr
    print_report(report)
    missed = misses(report)
    if not alive:
        missed.append("the server died during the run")
    if report["server_stderr_has_traceback"]:
        missed.append("the server logged a traceback")
    report["missed"] = missed
    if args.json:
        from deepep_calc.io.safe_write import write_atomic  # the tool's own safe-write rules

        write_atomic(args.json, json.dumps(report, indent=2) + "\n", "--json")
    for line in missed:
        print(f"MISSED: {line}")
    print("all targets met" if not missed else "targets missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
