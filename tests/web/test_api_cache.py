"""The caches of `web/api.py`: the API digests each request once (issue 12, item 4), and its caches
answer the same bytes.

Latency is measured by benchmarks/api_latency.py (cold and warm, with --check) and
benchmarks/speed.py (in-process service time), never here.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from deepep_calc.web import api
from deepep_calc.web.app import create_app


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = api.cache_key

    def counting(req: Any) -> str:
        calls.append(req)
        return real(req)

    monkeypatch.setattr(api, "cache_key", counting)
    api.clear_caches()
    return calls


@pytest.mark.parametrize("path", ["/api/evaluate", "/api/details"])
def test_one_cache_key_per_request(path: str, counted: list[Any]) -> None:
    client = TestClient(create_app())
    body = {"model": "deepseek-v3", "nodes": 3, "concurrency": 48}
    first = client.post(path, json=body)
    assert first.status_code == 200 and len(counted) == 1  # a new scenario: one digest
    again = client.post(path, json=body)
    assert again.content == first.content and len(counted) == 2  # a cached one: one digest


def test_evaluate_and_details_share_one_model_run(
    counted: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[Any] = []
    real = api.run
    monkeypatch.setattr(api, "run", lambda req: runs.append(req) or real(req))
    client = TestClient(create_app())
    body = {"model": "kimi-k2", "nodes": 2, "concurrency": 40}
    assert client.post("/api/evaluate", json=body).status_code == 200
    assert client.post("/api/details", json=body).status_code == 200
    assert len(runs) == 1
