"""Latency of POST /api/evaluate under 20 concurrent clients (target: p95 < 50 ms).

Starts `uvicorn` on 127.0.0.1 in a subprocess (one worker, as `deepep-calc serve` runs),
then drives it from this process with N concurrent keep-alive HTTP/1.1 connections for a
bounded number of requests and a bounded time. The client is a few lines of asyncio streams
rather than httpx: on a 2-core machine the client shares the CPU with the server, and a heavy
client would measure itself. Two workloads:

  warm  a page's pattern: a small set of scenarios asked again and again (the server's
        result cache answers after the first time)
  cold  every request a scenario never seen before (the model runs every time)

Usage: .venv/bin/python benchmarks/api_latency.py [--clients 20] [--requests 1000] [--check]
Loopback only; nothing else is contacted. Exits 1 with --check when warm p95 misses the target.
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

import httpx  # readiness probe only

TARGET_P95_MS = 50.0
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


def body_for(workload: str, i: int) -> dict[str, Any]:
    if workload == "warm":
        return WARM[i % len(WARM)]
    # a scenario never asked before: walk concurrency and ISL through fresh values
    return {"model": "deepseek-v3", "nodes": 4, "concurrency": 1 + i, "isl": 100 + (i % 7)}


async def post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, body: bytes) -> int:
    """One POST /api/evaluate on a kept-alive connection; returns the status code."""
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


async def run(base: str, workload: str, clients: int, requests: int) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(requests))
    stop_at = time.monotonic() + TIME_LIMIT_S
    port = int(base.rsplit(":", 1)[1])

    async def client() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for i in counter:
                if time.monotonic() > stop_at:
                    return
                body = json.dumps(body_for(workload, i)).encode()
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
    ap.add_argument("--requests", type=int, default=1000, help="per workload")
    ap.add_argument("--check", action="store_true", help="exit 1 if the warm p95 misses the target")
    ap.add_argument(
        "--pure-python", action="store_true", help="serve with h11 + asyncio (no httptools/uvloop)"
    )
    args = ap.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port, args.pure_python)
    try:
        wait_ready(base, proc)
        stack = "h11 + asyncio" if args.pure_python else "httptools + uvloop where installed"
        print(f"server: uvicorn ({stack}), 1 worker, {base}; {args.clients} clients; cpus: {os.cpu_count()}")
        results = {}
        for workload in ("warm", "cold"):
            print(f"{workload}:")
            asyncio.run(run(base, workload, args.clients, min(50, args.requests)))  # warm-up, not counted
            lat, _ = asyncio.run(run(base, workload, args.clients, args.requests))
            results[workload] = lat
            print(
                f"  p50 {pct(lat, 50):6.1f} ms   p95 {pct(lat, 95):6.1f} ms   p99 {pct(lat, 99):6.1f} ms"
                f"   (target p95 < {TARGET_P95_MS:g} ms)"
            )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    if args.check and pct(results["warm"], 95) >= TARGET_P95_MS:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
