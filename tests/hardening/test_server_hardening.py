"""The local server's promises (docs/security.md), each tried the way an attacker or a bad client would.

Two kinds of test: in-process through TestClient (headers, content types, limits, forced
errors, file access watched by an audit hook), and against a real `deepep-calc serve`
subprocess on a free loopback port, with hand-written HTTP where a client library would
normalise the attack away (`/static/../..`, chunked bodies, Host headers, SIGTERM mid-request).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import deepep_calc
from deepep_calc.catalog.hf import MAX_CONFIG_BYTES
from deepep_calc.cli.commands.web import GRACE_S
from deepep_calc.web.guard import JSON_LIMIT, host_name, loopback_hosts
from paths import TESTS
from web_fixtures import app, client, free_port  # noqa: F401  (fixtures)

PACKAGE_DIR = str(Path(deepep_calc.__file__).resolve().parent)
LEAKS = ("Traceback", 'File "', "site-packages", '.py"', ".py'", "/work/", PACKAGE_DIR)
REMOTE_MARKERS = ("*", "http:", "https:", "ws:", "wss:", "://")


# helpers -----------------------------------------------------------------------------------------


def assert_hardened(status: int, headers, body: bytes | str = b"") -> None:
    """Security headers present, CSP local-only, and nothing internal in the body."""
    h = {k.lower(): v for k, v in dict(headers).items()}
    assert h.get("x-content-type-options") == "nosniff", (status, h)
    assert h.get("x-frame-options") == "DENY", (status, h)
    assert h.get("referrer-policy") == "no-referrer", (status, h)
    csp = {}
    for part in filter(str.strip, h["content-security-policy"].split(";")):
        name, *values = part.split()
        csp[name] = values
    assert csp["default-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["script-src"] == ["'self'"]  # no inline or eval'd script, no CDN
    for name, values in csp.items():
        for token in values:
            assert not any(m in token for m in REMOTE_MARKERS), f"{name} {token} allows a remote origin"
            assert token in ("'self'", "'none'", "'unsafe-inline'", "data:", "blob:"), (name, token)
    assert "access-control-allow-origin" not in h  # no CORS: other sites cannot read answers
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    for marker in LEAKS:
        assert marker not in text, f"{marker!r} leaked into a {status} response"


def hardened(resp):
    assert_hardened(resp.status_code, resp.headers, resp.content)
    return resp


def raw(port: int, request: bytes, timeout: float = 20.0) -> tuple[int, dict[str, str], bytes]:
    """One hand-written request on its own connection; the whole response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def get(path: str, host: str | None = "127.0.0.1") -> bytes:
    host_line = f"Host: {host}\r\n" if host is not None else ""
    version = "1.1" if host is not None else "1.0"
    return f"GET {path} HTTP/{version}\r\n{host_line}Connection: close\r\n\r\n".encode("latin-1")


def post_json(body: bytes, host: str = "127.0.0.1", close: bool = True) -> bytes:
    return (
        b"POST /api/evaluate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n%s\r\n%s"
        % (host.encode(), len(body), b"Connection: close\r\n" if close else b"", body)
    )


class Served:
    """`deepep-calc serve` in a subprocess (the real entry point, signals and all)."""

    def __init__(self, *args: str) -> None:
        self.port = free_port()
        cmd = [sys.executable, "-m", "deepep_calc.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited: {self.proc.communicate()}")
            try:
                if raw(self.port, get("/api/models"), timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail("server did not start")
            time.sleep(0.1)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def stop(self, timeout: float = 5.0) -> tuple[int, str, str, float]:
        """SIGTERM; (exit code, stdout, stderr, seconds it took)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            pytest.fail(f"no exit within {timeout} s of SIGTERM: {err}")
        return self.proc.returncode, out, err, time.monotonic() - t0


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = Served()
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            code, _, err, _ = server.stop(timeout=15)
            assert code == 0 and "Traceback" not in err, err


@pytest.fixture
def spawn() -> Iterator[type[Served]]:
    """Start servers inside a test; whatever is left running is killed afterwards."""
    started: list[Served] = []

    class Tracked(Served):
        def __init__(self, *args: str) -> None:
            started.append(self)
            super().__init__(*args)

    yield Tracked
    for server in started:
        server.kill()


# binding -----------------------------------------------------------------------------------------


def listening_addresses(port: int) -> list[str]:
    """Local addresses of the LISTEN sockets on `port`, from /proc/net/tcp{,6} (hex, as the kernel shows)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:
                found.append(address)
    return found


def test_default_bind_is_loopback_only(served):
    assert listening_addresses(served.port) == ["0100007F"]  # 127.0.0.1, nothing else


@pytest.mark.slow
def test_public_bind_warns_and_sigterm_drains_the_request_in_flight(spawn):
    server = spawn("--host", "0.0.0.0")
    assert listening_addresses(server.port) == ["00000000"]
    # No Host check on a deliberate public bind: the names others use for this machine are unknown.
    status, _, _ = raw(server.port, post_json(b"{}", host="calc.lan"))
    assert status == 200

    body = json.dumps({"model": "kimi-k2", "nodes": 4, "concurrency": 77}).encode()
    request = post_json(body, close=False)
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    conn.sendall(request[:-10])  # headers and most of the body: the request is in flight
    time.sleep(0.3)
    server.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while True:  # the listener closes first ...
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
        except OSError:
            break
        assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
        time.sleep(0.05)
    assert server.proc.poll() is None  # ... while the request in flight keeps it alive
    conn.sendall(request[-10:])
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert json.loads(payload)["scenario"]["concurrency"] == 77

    code, out, err, _ = server.stop()
    assert code == 0, err
    assert "Traceback" not in err
    assert err.startswith("deepep-calc: warning: binding 0.0.0.0 makes the calculator reachable")
    assert "no authentication" in err.splitlines()[0]
    assert f"serving on http://0.0.0.0:{server.port}/" in out


@pytest.mark.slow
def test_a_repeated_sigterm_while_stopping_still_exits_zero(spawn):
    """Service managers ask again when a stop is slow: a SIGTERM landing while the server is
    already on its way out must not turn exit 0 into death by signal (-15)."""
    server = spawn()
    deadline = time.monotonic() + 5
    while server.proc.poll() is None:
        assert time.monotonic() < deadline, "no exit within 5 s of repeated SIGTERMs"
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.002)
    _, err = server.proc.communicate()
    assert (server.proc.returncode, err) == (0, "")


@pytest.mark.slow
def test_sigterm_on_an_idle_server_exits_zero_quickly(spawn):
    server = spawn()
    keep_alive = socket.create_connection(("127.0.0.1", server.port))  # an idle kept-alive client
    code, _, err, took = server.stop()
    keep_alive.close()
    assert (code, err) == (0, "")
    assert took < 5


# Host header (DNS rebinding) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8000", "127.0.0.1"), ("LocalHost", "localhost"), ("[::1]:80", "::1"),
     ("localhost.:1", "localhost"), ("evil.example", "evil.example"), ("evil.example:8000", "evil.example"),
     ("[::1", "[::1")],
)  # fmt: skip
def test_host_name_parsing(header, name):
    assert host_name(header) == name


def test_loopback_hosts_include_the_bound_address():
    assert loopback_hosts("127.0.0.2") == {"localhost", "127.0.0.1", "::1", "127.0.0.2"}
    assert loopback_hosts("[::1]") == {"localhost", "127.0.0.1", "::1"}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", None])
def test_loopback_host_names_are_served(served, host):
    shown = None if host is None else f"{host}:{served.port}"
    status, headers, body = raw(served.port, get("/api/models", shown))
    assert status == 200
    assert_hardened(status, headers, body)


@pytest.mark.parametrize(
    "host", ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.5"]
)
def test_other_host_names_are_refused(served, host):
    for request in (get("/api/models", host), get("/", f"{host}:{served.port}"), post_json(b"{}", host=host)):
        status, headers, body = raw(served.port, request)
        assert status == 400
        assert_hardened(status, headers, body)
        assert json.loads(body)["error"].startswith("this server answers only to a loopback Host")


def test_host_check_in_process(client):  # noqa: F811
    from fastapi.testclient import TestClient

    from deepep_calc.web.app import create_app

    strict = create_app(allowed_hosts=loopback_hosts("127.0.0.1"))
    with TestClient(strict, base_url="http://evil.example") as c:
        assert hardened(c.get("/api/models")).status_code == 400
    with TestClient(strict, base_url="http://localhost:8000") as c:
        assert hardened(c.get("/api/models")).status_code == 200
    assert hardened(client.get("/api/models")).status_code == 200  # default: no check (test clients)


# static files and paths --------------------------------------------------------------------------

TRAVERSALS = [
    "/static/../../pyproject.toml",
    "/static/../app.py",
    "/static/%2e%2e/%2e%2e/pyproject.toml",
    "/static/%2E%2E/app.py",
    "/static/..%2fapp.py",
    "/static/..%2F..%2Fpyproject.toml",
    "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fpyproject.toml",
    "/static/%252e%252e/app.py",
    "/static/..%5capp.py",
    "/static/..\\app.py",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/style.css/../../app.py",
    "/static/./../app.py",
    "/static/%00",
    "/static/app.py%00.css",
    "/static/~/.bashrc",
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/templates/index.html",
    "/web/app.py",
    "/static/../templates/index.html",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_static_route_serves_nothing_outside_its_folder(served, path):
    status, headers, body = raw(served.port, get(path))
    assert status in (400, 404), (status, body[:200])
    assert_hardened(status, headers)  # the body echoes the path asked for, dots and ".py" included
    assert set(json.loads(body)) == {"error", "field"}
    for secret in (b"[project]", b"def create_app", b"root:x:0", b"{% ", b"import "):
        assert secret not in body


def test_static_files_themselves_are_served_hardened(served):
    for path, kind in (("/static/style.css", "text/css"), ("/static/app.js", "javascript")):
        status, headers, _ = raw(served.port, get(path))
        assert status == 200 and kind in headers["content-type"]
        assert_hardened(status, headers, b"")
    status, headers, _ = raw(served.port, get("/static"))  # the mount's redirect
    assert status == 307
    assert_hardened(status, headers)


# No file-system path is taken from a request ----------------------------------------------------


class FileWatch:
    """Every file the process opens while `active` (a sys.audit hook: catches open, io.open, os.open
    in any thread, including the one TestClient runs the app in)."""

    def __init__(self) -> None:
        self.active = False
        self.opened: list[tuple[str, object, object]] = []
        sys.addaudithook(self._hook)  # cannot be removed; idle unless `active`

    def _hook(self, event: str, args: tuple) -> None:
        if self.active and event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            self.opened.append((os.fsdecode(args[0]), args[1], args[2] if len(args) > 2 else 0))

    def __call__(self, call):
        """Run `call`; its result and the files opened meanwhile."""
        self.opened = []
        self.active = True
        try:
            result = call()
        finally:
            self.active = False
        return result, self.opened


@pytest.fixture(scope="module")
def watch() -> FileWatch:
    return FileWatch()


@pytest.fixture
def sentinel(tmp_path) -> Path:
    """A real, valid config.json: a server that read a path would succeed with it."""
    path = tmp_path / "config.json"
    path.write_text((TESTS / "fixtures" / "hf" / "mixtral-8x7b" / "config.json").read_text())
    return path


def path_values(path: Path) -> list[str]:
    home_relative = "~/" + os.path.relpath(path, os.path.expanduser("~"))
    return [
        str(path),
        str(path.parent),
        f"file://{path}",
        f"file:{path}",
        home_relative,
        "~",
        "../" * 12 + str(path).lstrip("/"),
        "..\\..\\..\\windows\\win.ini",
        "/etc/passwd",
        "/proc/self/environ",
        "/dev/zero",
        f"{path}\x00",
        f"deepseek-v3\x00{path}",
        "\x00",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "\\\\server\\share\\config.json",
    ]


def assert_untouched(opened: list[tuple[str, object, object]], sentinel: Path) -> None:
    """Nothing a request named was opened, and nothing at all was opened for writing."""
    named = [
        p for p, _, _ in opened if str(sentinel.parent) in p or p.startswith(("/etc", "/proc/self", "/dev/"))
    ]
    assert named == []
    bits = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    writes = [
        p for p, mode, flags in opened if any(c in str(mode or "") for c in "wax+") or int(flags or 0) & bits
    ]
    assert writes == []


def test_the_file_watch_sees_opens_in_other_threads(watch, sentinel):
    """Control: the watch is not blind (a read in another thread, as the app runs under TestClient)."""
    worker = threading.Thread(target=sentinel.read_text)
    _, opened = watch(lambda: (worker.start(), worker.join()))
    assert str(sentinel) in [p for p, _, _ in opened]
    _, opened = watch(lambda: sentinel.write_text("{}"))
    with pytest.raises(AssertionError):
        assert_untouched(opened, sentinel)


EVALUATE_TEXT_FIELDS = [
    "model", "instance", "engine", "transport", "alternative", "weight_dtype", "kv_dtype", "calibration",
    "config_json", "disagg", "kv_transport", "prefill_arm", "decode_arm", "prefill_transport",
    "decode_transport",
]  # fmt: skip


def test_the_text_fields_listed_are_all_the_text_fields():
    from deepep_calc.web.schemas import EvaluateRequest, KernelRequest

    def texts(model):
        return {
            n
            for n, f in model.model_fields.items()
            if "str" in str(f.annotation) or "Literal" in str(f.annotation)
        }

    assert texts(EvaluateRequest) == set(EVALUATE_TEXT_FIELDS)
    assert texts(KernelRequest) == {"transport", "instance", "dispatch_dtype"}


@pytest.mark.parametrize("field", EVALUATE_TEXT_FIELDS)
def test_no_path_in_any_evaluate_field_is_opened(client, watch, sentinel, field):  # noqa: F811
    for value in path_values(sentinel):
        for endpoint in ("/api/evaluate", "/api/details"):
            resp, opened = watch(lambda e=endpoint, v=value: client.post(e, json={field: v}))
            assert resp.status_code == 422, (field, value, resp.text)
            assert hardened(resp).json()["field"] == field
            assert_untouched(opened, sentinel)


@pytest.mark.parametrize("field", ["transport", "instance", "dispatch_dtype"])
def test_no_path_in_any_kernel_field_is_opened(client, watch, sentinel, field):  # noqa: F811
    for value in path_values(sentinel):
        resp, opened = watch(lambda v=value: client.post("/api/kernel", json={field: v}))
        assert resp.status_code == 422, (field, value, resp.text)
        assert hardened(resp).json()["field"] == field
        assert_untouched(opened, sentinel)


FORM_TEXT_FIELDS = [
    "model",
    "instance",
    "engine",
    "transport",
    "alternative",
    "weight_dtype",
    "kv_dtype",
    "config_text",
]


@pytest.mark.parametrize("field", FORM_TEXT_FIELDS)
def test_no_path_in_the_page_form_or_link_is_opened(client, watch, sentinel, field):  # noqa: F811
    for value in [*path_values(sentinel)[:8], f"{sentinel}\x00"]:
        for call in (
            lambda v=value: client.post("/", data={field: v}),
            lambda v=value: client.get("/", params={field: v}),
        ):
            resp, opened = watch(call)
            assert resp.status_code == 422, (field, value)
            hardened(resp)
            assert_untouched(opened, sentinel)
    resp, opened = watch(
        lambda: client.post("/", data={"calibration": str(sentinel), "model": "deepseek-v3"})
    )
    assert resp.status_code == 200  # not a page field: ignored, never read
    assert_untouched(opened, sentinel)


def test_an_upload_name_is_never_used_as_a_path(client, watch, sentinel):  # noqa: F811
    content = sentinel.read_bytes()
    for name in (str(sentinel), "../../../../etc/passwd", "~/.ssh/id_rsa", "a\x00b.json", "C:\\x.json"):
        resp, opened = watch(
            lambda n=name: client.post("/", files={"config_file": (n, content, "application/json")})
        )
        assert resp.status_code == 200  # the content is the config; the name means nothing
        hardened(resp)
        assert_untouched(opened, sentinel)


# content types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ctype",
    ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", " application/json ;x=1"],
)
def test_json_content_types_accepted(client, ctype):  # noqa: F811
    resp = client.post("/api/evaluate", content=b"{}", headers={"content-type": ctype})
    assert hardened(resp).status_code == 200


@pytest.mark.parametrize(
    "ctype",
    [None, "", "text/plain", "text/json", "application/jsonx", "application/json-patch+json",
     "application/x-json", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded",
     "application/xml", "application/json, text/plain", "*/*"],
)  # fmt: skip
@pytest.mark.parametrize("path", ["/api/evaluate", "/api/details", "/api/kernel"])
def test_other_content_types_are_415(client, path, ctype):  # noqa: F811
    headers = {} if ctype is None else {"content-type": ctype}
    resp = hardened(client.post(path, content=b"{}", headers=headers))
    assert resp.status_code == 415
    assert resp.json()["error"].startswith("send the body as application/json")


@pytest.mark.parametrize("ctype", ["application/json", "text/plain", "text/html", None])
def test_page_form_takes_only_form_bodies(client, ctype):  # noqa: F811
    headers = {} if ctype is None else {"content-type": ctype}
    assert hardened(client.post("/", content=b"model=kimi-k2", headers=headers)).status_code == 415


# size limits -------------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """One response by its Content-Length (the connection may stay open after it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536) or pytest.fail(f"closed before a response: {data!r}")
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(v)
        for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
        if k.lower() == b"content-length"
    )
    while len(body) < length:
        body += sock.recv(65536) or pytest.fail("closed mid-response")
    return head, body


def test_chunked_body_over_the_limit_is_cut_off_on_a_real_server(served):
    """No Content-Length: the 413 comes as the limit is crossed, and what follows is not kept."""
    chunk = b"y" * 65536
    with socket.create_connection(("127.0.0.1", served.port), timeout=20) as s:
        s.sendall(
            b"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        opening = b'{"config_json": "'
        s.sendall(b"%x\r\n%s\r\n" % (len(opening), opening))
        for _ in range(JSON_LIMIT // len(chunk) + 1):  # just past the limit; the body never ends
            s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        head, body = read_response(s)
        assert head.startswith(b"HTTP/1.1 413"), head
        assert json.loads(body)["error"].startswith("request body over 256 KB")
        before = rss_mb(served.proc.pid)
        for _ in range(320):  # 20 MB more: read and dropped by the server, never buffered
            s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        assert rss_mb(served.proc.pid) - before < 8


def test_declared_length_over_the_limit_is_refused_before_reading(served):
    request = (
        b"POST /api/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (JSON_LIMIT + 1)
    )  # no body sent at all: the answer comes from the headers alone
    status, headers, body = raw(served.port, request)
    assert status == 413
    assert_hardened(status, headers, body)


def test_config_text_over_5_mb_inside_the_form_limit_is_refused(client):  # noqa: F811
    # The page posts multipart (it carries an upload); only that encoding may be this large.
    text = "{" + " " * MAX_CONFIG_BYTES + "}"
    resp = hardened(client.post("/", files={"config_text": (None, text)}))
    assert resp.status_code == 422
    assert "larger than 5 MB" in resp.text


def test_urlencoded_form_is_held_to_the_json_limit(client):  # noqa: F811
    resp = hardened(client.post("/", data={"config_text": "{" + " " * JSON_LIMIT + "}"}))
    assert resp.status_code == 413
    small = hardened(client.post("/", data={"model": "kimi-k2"}))
    assert small.status_code == 200


def test_upload_just_over_5_mb_is_refused_by_the_upload_limit(client):  # noqa: F811
    data = b" " * (MAX_CONFIG_BYTES + 1)  # within the form's body limit, over the file's
    resp = hardened(client.post("/", files={"config_file": ("config.json", data, "application/json")}))
    assert resp.status_code == 422
    assert 'data-error-for="config_json"' in resp.text and "larger than 5 MB" in resp.text


def test_upload_far_over_the_limit_streamed_is_413(client):  # noqa: F811
    boundary = b"xyzzy"

    def parts():
        yield (
            b'--%s\r\nContent-Disposition: form-data; name="config_file"; filename="c.json"\r\n\r\n'
            % boundary
        )
        for _ in range(7):
            yield b" " * (1024 * 1024)
        yield b"\r\n--%s--\r\n" % boundary

    resp = client.post(
        "/", content=parts(), headers={"content-type": f"multipart/form-data; boundary={boundary.decode()}"}
    )
    assert hardened(resp).status_code == 413


@pytest.mark.parametrize(
    "files",
    [
        {
            "config_file": ("a.json", b"{}", "application/json"),
            "other": ("b.json", b"{}", "application/json"),
        },
    ],
)
def test_more_than_one_upload_is_a_clean_400(client, files):  # noqa: F811
    resp = hardened(client.post("/", files=files))
    assert resp.status_code == 400


def test_too_many_form_fields_is_a_clean_400(client):  # noqa: F811
    fields = {f"f{i}": "1" for i in range(100)}
    resp = client.post("/", data=fields, files={"config_file": ("a.json", b"{}", "application/json")})
    assert hardened(resp).status_code == 400


def test_non_numeric_content_length_is_400(client):  # noqa: F811
    from deepep_calc.web.guard import Guard

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    async def never(scope, receive, send):  # the app behind must not be reached
        raise AssertionError("reached the app")

    import asyncio

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/evaluate",
        "headers": [(b"content-length", b"12abc")],
    }
    asyncio.run(Guard(never)(scope, receive, send))
    assert sent[0]["status"] == 400
    assert_hardened(400, [(k.decode(), v.decode()) for k, v in sent[0]["headers"]], sent[1]["body"])


# security headers on every response -------------------------------------------------------------


def test_security_headers_on_every_status(client):  # noqa: F811
    seen = {}

    def record(resp):
        hardened(resp)
        seen[resp.status_code] = resp
        return resp

    record(client.get("/"))  # 200 HTML
    record(client.get("/mechanism"))
    record(client.get("/api/models"))  # 200 JSON
    record(client.get("/openapi.json"))
    record(client.get("/static/plotly.min.js"))
    record(client.get("/static", follow_redirects=False))  # 307
    record(client.get("/nowhere", headers={"accept": "text/html"}))  # 404 HTML
    record(client.get("/api/nowhere"))  # 404 JSON
    record(client.put("/api/evaluate", json={}))  # 405
    record(client.request("TRACE", "/"))
    record(
        client.post(
            "/api/evaluate", content=b"x" * (JSON_LIMIT + 1), headers={"content-type": "application/json"}
        )
    )
    record(client.post("/api/evaluate", content=b"{}", headers={"content-type": "text/plain"}))  # 415
    record(client.post("/api/evaluate", json={"nodes": -1}))  # 422 JSON
    record(client.get("/", params={"nodes": "-1"}))  # 422 HTML
    assert {200, 307, 404, 405, 413, 415, 422} <= set(seen)


def test_no_cors_preflight_is_granted(client):  # noqa: F811
    resp = client.options(
        "/api/evaluate",
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert hardened(resp).status_code == 405
    cross = client.post("/api/evaluate", json={}, headers={"origin": "https://evil.example"})
    assert hardened(cross).status_code == 403  # not even computed: another site's page sent it


# forced internal errors: 500, generic, hardened, nothing internal --------------------------------


def _boom(kind: type[BaseException]):
    def raiser(*_a, **_k):
        if kind is FileNotFoundError:
            raise FileNotFoundError(2, "No such file or directory", f"{PACKAGE_DIR}/catalog/data/models.toml")
        raise kind(f'File "{PACKAGE_DIR}/evaluate.py", line 12, in site-packages /work/main secret')

    return raiser


FORCED = [
    ("deepep_calc.web.api", "run", "post", "/api/evaluate", {"nodes": 5, "concurrency": 11}),
    ("deepep_calc.web.api", "details_of", "post", "/api/details", {"nodes": 5, "concurrency": 12}),
    ("deepep_calc.estimate.kernel", "kernel_query", "post", "/api/kernel", {"ep": 32}),
    ("deepep_calc.report.catalogs", "models_rows", "get", "/api/models", None),
    ("deepep_calc.web.pages", "run", "get", "/?concurrency=13", None),
    ("deepep_calc.web.pages", "request_from_form", "post", "/", {"nodes": "3"}),
]


@pytest.mark.parametrize(
    "kind", [RuntimeError, FileNotFoundError, KeyError, ZeroDivisionError, RecursionError]
)
@pytest.mark.parametrize(("module", "name", "method", "path", "body"), FORCED)
def test_internal_errors_are_generic_500s(client, monkeypatch, kind, module, name, method, path, body):  # noqa: F811
    import importlib

    from deepep_calc.web import api

    monkeypatch.setattr(importlib.import_module(module), name, _boom(kind))
    api.clear_caches()
    try:
        if method == "get":
            resp = client.get(path, headers={"accept": "text/html"})
        elif path == "/":
            resp = client.post(path, data=body)
        else:
            resp = client.post(path, json=body)
    finally:
        api.clear_caches()
    assert resp.status_code == 500
    assert hardened(resp).json() == {"error": "internal error: the server log has the details", "field": None}
    assert "secret" not in resp.text and "models.toml" not in resp.text


def test_a_crash_in_one_request_does_not_take_the_server_down(served):
    # A request the model refuses, then a normal one, on a real server: still answering.
    status, headers, body = raw(served.port, post_json(b'{"nodes": 0}'))
    assert status == 422
    assert_hardened(status, headers, body)
    assert raw(served.port, get("/api/models"))[0] == 200


def test_concurrent_bad_requests_leave_no_trace(served):
    """Thirty threads of malformed input at once: every answer a 4xx, hardened, and clean."""
    bodies = [
        b"{",
        b"[]",
        b'{"model": "\\u0000"}',
        b'{"nodes": 1e400}',
        b'{"config_json": "{\\"a\\":' + b"[" * 5000 + b'"}',
    ]
    results = []

    def worker(i: int) -> None:
        results.append(raw(served.port, post_json(bodies[i % len(bodies)])))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 30
    for status, headers, body in results:
        assert 400 <= status < 500, body
        assert_hardened(status, headers, body)


# cross-site requests (Origin / Sec-Fetch-Site) ------------------------------------------------------

FORM = {"content-type": "application/x-www-form-urlencoded"}
CROSS_SITE = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "empty"}


@pytest.mark.parametrize(
    "headers",
    [
        {**FORM, "origin": "https://evil.example", **CROSS_SITE},  # a modern browser
        {**FORM, "origin": "https://evil.example"},  # no fetch metadata: the Origin decides
        {**FORM, "origin": "null"},  # a sandboxed frame, no fetch metadata
        {**FORM, "origin": "http://testserver:8001"},  # another port is another origin
        {**FORM, "sec-fetch-site": "same-site", "sec-fetch-mode": "navigate"},  # POST from localhost:3000
    ],
)
def test_a_cross_site_form_post_is_refused_before_any_work(client, headers, monkeypatch):  # noqa: F811
    from deepep_calc.web import pages

    monkeypatch.setattr(pages, "run", lambda *_: pytest.fail("a cross-site POST was evaluated"))
    resp = hardened(client.post("/", content=b"model=kimi-k2&nodes=4", headers=headers))
    assert resp.status_code == 403
    assert resp.json()["error"].startswith("refused: ")


@pytest.mark.parametrize("path", ["/api/evaluate", "/api/details", "/api/kernel"])
def test_a_cross_site_api_post_is_refused(client, path):  # noqa: F811
    headers = {"content-type": "application/json", **CROSS_SITE, "origin": "https://evil.example"}
    assert hardened(client.post(path, content=b"{}", headers=headers)).status_code == 403


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/", {**FORM, "origin": "http://testserver", "sec-fetch-site": "same-origin"}),
        # Chromium's own form under Referrer-Policy: no-referrer: Origin null, but same-origin
        ("POST", "/", {**FORM, "origin": "null", "sec-fetch-site": "same-origin"}),
        ("POST", "/", {**FORM, "origin": "http://testserver"}),  # no fetch metadata, our origin
        ("POST", "/", FORM),  # curl, scripts: no browser headers at all
        # a link to the page from another site (how a scenario is shared) is a navigation
        ("GET", "/?model=kimi-k2", {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate",
                                    "sec-fetch-dest": "document"}),
        ("GET", "/api/models", {"sec-fetch-site": "none", "sec-fetch-mode": "navigate"}),
    ],
)  # fmt: skip
def test_own_pages_links_and_non_browsers_are_served(client, method, path, headers):  # noqa: F811
    body = b"model=kimi-k2" if method == "POST" else None
    assert hardened(client.request(method, path, content=body, headers=headers)).status_code == 200


def test_a_cross_site_subresource_get_is_refused(client):  # noqa: F811
    # <img src="http://127.0.0.1:8000/?model=..."> on another site: not a navigation
    resp = client.get("/?model=kimi-k2", headers={**CROSS_SITE, "sec-fetch-dest": "image"})
    assert hardened(resp).status_code == 403


def test_a_cross_site_form_post_is_refused_on_a_real_server(served):
    body = b"model=kimi-k2"
    request = (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: https://evil.example\r\n"
        b"Sec-Fetch-Site: cross-site\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (served.port, len(body), body)
    )
    status, headers, payload = raw(served.port, request)
    assert status == 403
    assert_hardened(status, headers, payload)


# HEAD ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/mechanism", "/api/models", "/static/style.css"])
def test_head_is_get_without_a_body(client, path):  # noqa: F811
    got = client.get(path)
    head = hardened(client.head(path))
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]


def test_head_on_a_real_server(served):
    request = f"HEAD / HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nConnection: close\r\n\r\n".encode()
    status, headers, body = raw(served.port, request)
    assert (status, body) == (200, b"")
    assert headers["content-type"].startswith("text/html")
    assert_hardened(status, headers, body)


# serve: bind first, stop silently ---------------------------------------------------------------------


def test_a_busy_port_is_one_line_and_nothing_is_announced():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "deepep_calc.cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""  # no "serving on" for a server that never served
    assert run.stderr.count("\n") == 1 and "already in use" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("host", "needle"), [("256.1.1.1", "--host: '256.1.1.1'"), ("10.255.254.253", "no such address")]
)
def test_an_address_this_machine_lacks_is_one_line(host, needle):
    run = subprocess.run(
        [sys.executable, "-m", "deepep_calc.cli", "serve", "--host", host, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    assert run.stderr.startswith("deepep-calc: error: ") and run.stderr.count("\n") == 1
    assert needle in run.stderr


@pytest.mark.slow
def test_sigterm_with_a_stalled_client_exits_zero_and_silent(spawn):
    """A client that never finishes its request: cancelled after the grace period, quietly."""
    server = spawn()
    body = b'{"nodes": 2}'
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    stalled.sendall(post_json(body, close=False)[:-5])  # the body never completes
    time.sleep(0.3)
    code, _, err, _ = server.stop(timeout=GRACE_S + 20)
    stalled.close()
    assert (code, err) == (0, "")


def test_the_listening_socket_lets_asyncio_disable_nagle():
    """asyncio turns on TCP_NODELAY only for sockets whose proto is IPPROTO_TCP; without it every
    keep-alive response waited for a delayed ACK (~40 ms), a tenfold throughput loss."""
    from deepep_calc.cli.commands.web import bind

    sock = bind("127.0.0.1", free_port())
    try:
        assert (sock.family, sock.type, sock.proto) == (
            socket.AF_INET,
            socket.SOCK_STREAM,
            socket.IPPROTO_TCP,
        )
    finally:
        sock.close()
