"""Fixtures for the web tests: the app under TestClient, and a real uvicorn on loopback.

Imported by the web test modules (not a conftest, so it cannot collide with one another
suite adds). The live server runs in a background thread on a free 127.0.0.1 port and is
stopped by the fixture; nothing listens on any other address.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def app():
    from deepep_calc.web.app import create_app

    return create_app()


@pytest.fixture(scope="module")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


class LiveServer:
    """uvicorn serving the app in a thread; `url` is its base address."""

    def __init__(self) -> None:
        import uvicorn

        from deepep_calc.web.app import create_app

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="deepep-calc-test-server", daemon=True)

    def start(self, timeout: float = 20.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    server = LiveServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
