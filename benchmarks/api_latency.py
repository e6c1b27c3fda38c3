"""Latency of POST /api/evaluate under 20 concurrent clients (targets: p95 < 50 ms warm,
p95 < 20 ms cold, issue 12).

Starts `uvicorn` on 127.0.0.1 in a subprocess (one worker, as `deepep-calc serve` runs),
then drives it from this process with N concurrent keep-alive HTTP/1.1 connections for a
bounded number of requests and a bounded time. The client is a few lines of asyncio streams
rather than httpx: on a 2-core machine the client shares the CPU with the server, and a heavy
client would measure itself. Two workloads:

  warm  a page's pattern: a small set of scenarios asked again and again (the server's
        result cache answers after the first time)
  cold  every request a scenario never seen before (the model runs every time)

  base  GET /api/transports, a small answer that runs no model: the baseline, timed under
        the same clients in the same run (a busy machine slows it as much as the others)

Each workload runs `--repeats` times (default 3); p50 and p95 are reported per repeat, then as
min / median over the repeats and as a ratio to the baseline's median p50. Cold scenarios are
never reused: the warm-up and every repeat draw fresh ones.

Usage: .venv/bin/python benchmarks/api_latency.py [--clients 20] [--requests 1000] [--repeats 3] [--check]
Loopback only; nothing else is contacted. Exits 1 with --check when the median warm or cold p95
misses its target.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx2 as httpx  # readiness probe only (the test extra installs it)

TARGET_P95_MS = {"warm": 50.0, "cold": 20.0}
TIME_LIMIT_S = 120.0

WARM = [
    {},
    {"model": "deepseek-v3", "nodes": 4},
    {"model": "kimi-k2", "transport": "efa-gda"},
    {"model": "qwen3-235b-a22b", "nodes": 2, "concurrency": 64},
    {"instance": "ib-h800", "transport": "ib-ibgda", "model": "deepseek-v3", "nodes": 4},
    {"engine": "vllm", "comms": 1, "concurrency": 4},
    {"model": "gpt-oss-120b", "nodes": 2, "alternative": "tp"},
    {"model": "llama4-maverick", "instance": "p6-b200", "nodes": 2},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, pure_python: bool) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", "deepep_calc.web.app:create_app",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    if pure_python:  # what uvicorn falls back to without httptools / uvloop
        cmd += ["--http", "h11", "--loop", "asyncio"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(base + "/api/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit("server did not start")


def body_for(workload: str, i: int) -> dict[str, Any] | None:
    """The request body of request `i` (None: the baseline GET)."""
    if workload == "base":
        return None
    if workload == "warm":
        return WARM[i % len(WARM)]
    # a scenario never asked before: walk concurrency and ISL through fresh values
    return {"model": "deepseek-v3", "nodes": 4, "concurrency": 1 + i, "isl": 100 + (i % 7)}


async def post(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, body: bytes | None
) -> int:
    """One POST /api/evaluate (or, with no body, GET /api/transports) on a kept-alive
    connection; returns the status code."""
    if body is None:
        writer.write(b"GET /api/transports HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
    else:
        writer.write(
            b"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (port, len(body), body)
        )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def run(
    base: str, workload: str, clients: int, requests: int, start: int = 0
) -> tuple[list[float], int]:
    """`requests` requests from `clients` connections; request numbers start at `start` (so a
    cold run never repeats a scenario an earlier run asked)."""
    latencies: list[float] = []
    errors = 0
    counter = iter(range(start, start + requests))
    stop_at = time.monotonic() + TIME_LIMIT_S
    port = int(base.rsplit(":", 1)[1])

    async def client() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for i in counter:
                if time.monotonic() > stop_at:
                    return
                fields = body_for(workload, i)
                body = None if fields is None else json.dumps(fields).encode()
                t0 = time.perf_counter()
                status = await asyncio.wait_for(post(reader, writer, port, body), timeout=30.0)
                latencies.append((time.perf_counter() - t0) * 1000.0)
                if status != 200:
                    errors += 1
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    rate = len(latencies) / elapsed
    print(f"  {len(latencies)} requests in {elapsed:.1f} s ({rate:,.0f} req/s), {errors} errors")
    return latencies, errors


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=1000, help="per workload and repeat")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each workload (min / median over them)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the warm or cold p95 misses its target")
    ap.add_argument(
        "--pure-python", action="store_true", help="serve with h11 + asyncio (no httptools/uvloop)"
    )
    args = ap.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port, args.pure_python)
    p50: dict[str, list[float]] = {"base": [], "warm": [], "cold": []}
    p95: dict[str, list[float]] = {"base": [], "warm": [], "cold": []}
    try:
        wait_ready(base, proc)
        stack = "h11 + asyncio" if args.pure_python else "httptools + uvloop where installed"
        print(f"server: uvicorn ({stack}), 1 worker, {base}; {args.clients} clients; cpus: {os.cpu_count()}")
        start = 0  # cold request numbers: never reused, warm-up included
        for workload in p50:
            asyncio.run(run(base, workload, args.clients, min(50, args.requests), start))  # warm-up
            start += min(50, args.requests)
        for rep in range(args.repeats):
            for workload in p50:
                print(f"{workload} (repeat {rep + 1}/{args.repeats}):")
                lat, _ = asyncio.run(run(base, workload, args.clients, args.requests, start))
                start += args.requests
                p50[workload].append(pct(lat, 50))
                p95[workload].append(pct(lat, 95))
                print(
                    f"  p50 {pct(lat, 50):6.1f} ms   p95 {pct(lat, 95):6.1f} ms   p99 {pct(lat, 99):6.1f} ms"
                )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    ref = statistics.median(p50["base"])
    print(
        f"summary over {args.repeats} repeats (min / median; ratio = median / baseline median p50"
        f" {ref:.1f} ms):"
    )
    missed = []
    for workload in p50:
        for name, values in (("p50", p50[workload]), ("p95", p95[workload])):
            med = statistics.median(values)
            target = TARGET_P95_MS.get(workload) if name == "p95" else None
            note = "" if target is None else f"   target < {target:g} ms {'PASS' if med < target else 'MISS'}"
            if target is not None and med >= target:
                missed.append(f"{workload} {name}")
            print(
                f"  {workload:<4} {name}  min {min(values):6.1f}  median {med:6.1f} ms"
                f"   x{med / ref:5.2f}{note}"
            )
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
