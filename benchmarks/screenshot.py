"""The README's screenshot of the web page: `docs/img/page.png`.

Starts the app under uvicorn in a thread of this process on a free 127.0.0.1 port, opens the
page in Debian's chromium through Playwright (the browser the test suite uses), waits until
the charts are drawn, and saves the first 1,500 px at 1440 px wide (the verdict and the arms
table). Regenerate it whenever the page changes:

    .venv/bin/python benchmarks/screenshot.py [--out docs/img/page.png] [--query "?model=deepseek-v3"]

Loopback only: the page loads nothing from outside the server (plotly.js is served locally).
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "page.png"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve() -> tuple[object, threading.Thread, str]:
    """uvicorn serving the app in a daemon thread; (server, thread, base url)."""
    import uvicorn

    from deepep_calc.web.app import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="screenshot-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20.0
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


def capture(out: Path, query: str = "", width: int = 1440, height: int = 1500) -> Path:
    """Screenshot the page for `query` (e.g. "?model=deepseek-v3") into `out`; the path written."""
    from playwright.sync_api import sync_playwright

    server, thread, base = _serve()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(base + "/" + query)
            page.wait_for_selector("body[data-ready]")
            waited = 0
            while page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length < 4"):
                if waited > 20_000:
                    raise RuntimeError("the charts were not drawn within 20 s")
                page.wait_for_timeout(50)
                waited += 50
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            browser.close()
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(timeout=10)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--query", default="", help='page query string, e.g. "?model=deepseek-v3&nodes=2"')
    args = parser.parse_args()
    print(f"wrote {capture(args.out, args.query)}")


if __name__ == "__main__":
    main()
