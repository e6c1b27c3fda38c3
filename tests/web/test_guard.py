"""The door (`web/guard.py`): body limits, content types, origins, Host names and the headers
every response carries, before any parser or route sees a request.

The first tests go through the app under TestClient; the rest call the pure functions and the
`Guard` middleware itself around a stub ASGI app, so what the door does is seen without a route
behind it (the stub records what reached it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from deepep_calc.web.guard import (
    CSP,
    FORM_LIMIT,
    JSON_LIMIT,
    SECURITY_HEADERS,
    Guard,
    _host_key,
    _origin_host,
    cross_site,
    host_name,
    limit_for,
    loopback_hosts,
)
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import clean, error_of

# Through the app -------------------------------------------------------------------------------


def test_body_over_the_limit_is_413(client):  # noqa: F811
    big = json.dumps({"config_json": "x" * 300_000})
    resp = clean(client.post("/api/evaluate", content=big, headers={"content-type": "application/json"}))
    assert error_of(resp, 413)["error"].startswith("request body over")


def test_streamed_body_over_the_limit_is_413(client):  # noqa: F811
    def chunks():
        yield b'{"config_json": "'
        for _ in range(40):
            yield b"y" * 10_000
        yield b'"}'

    resp = clean(client.post("/api/evaluate", content=chunks(), headers={"content-type": "application/json"}))
    assert "content-length" not in {k.lower() for k in resp.request.headers}
    error_of(resp, 413)


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("/api/evaluate", "text/plain"),
        ("/api/evaluate", "application/x-www-form-urlencoded"),
        ("/api/kernel", "text/xml"),
        ("/", "application/json"),
    ],
)
def test_wrong_content_type_is_415(client, path, ctype):  # noqa: F811
    resp = clean(client.post(path, content=b"{}", headers={"content-type": ctype}))
    assert error_of(resp, 415)["field"] is None


def test_form_upload_over_5_mb_is_413(client):  # noqa: F811
    huge = b" " * (6 * 1024 * 1024)
    resp = clean(client.post("/", files={"config_file": ("config.json", huge, "application/json")}))
    assert resp.status_code == 413


# The pure rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("LOCALHOST:8000", "localhost"),  # lower-cased, port dropped
        ("[::1]:8000", "::1"),  # IPv6 brackets and port dropped
        ("::1", "::1"),  # a bare IPv6 address has more than one colon: kept whole
        ("example.org.", "example.org"),  # the trailing dot of a fully qualified name
        ("  127.0.0.1  ", "127.0.0.1"),
        ("[::1", "[::1"),  # an unclosed bracket is left as sent (it then matches no allowed name)
    ],
)
def test_host_name_is_the_bare_lower_case_name(header: str, name: str) -> None:
    assert host_name(header) == name


def test_loopback_hosts_are_the_usual_names_and_the_bound_address() -> None:
    assert loopback_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert loopback_hosts(" [::1] ") == {"localhost", "127.0.0.1", "::1"}
    assert loopback_hosts("127.0.0.2") == {"localhost", "127.0.0.1", "::1", "127.0.0.2"}
    assert loopback_hosts("LocalHost") == {"localhost", "127.0.0.1", "::1"}


def test_only_a_multipart_page_form_gets_the_upload_limit() -> None:
    """JSON limit 256 KiB; a page's multipart form may carry a 5 MiB config.json plus 64 KiB of
    form: 5 * 1,048,576 + 65,536 = 5,308,416 bytes."""
    assert JSON_LIMIT == 262_144
    assert FORM_LIMIT == 5_308_416
    assert limit_for("/") == FORM_LIMIT  # the default content type is multipart
    assert limit_for("/", "multipart/form-data") == FORM_LIMIT
    assert limit_for("/", "application/x-www-form-urlencoded") == JSON_LIMIT
    assert limit_for("/api/evaluate", "multipart/form-data") == JSON_LIMIT  # never on the API


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://localhost", "localhost:80", "http"),  # default port on one side only
        ("https://Example.org:443", "example.org", "https"),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "http"),
        ("http://[::1]:8000", "[::1]:8000", "http"),
    ],
)
def test_an_origin_and_a_host_header_spell_the_same_place_alike(origin: str, host: str, scheme: str) -> None:
    assert _origin_host(origin) == _host_key(host, scheme)


@pytest.mark.parametrize("origin", ["null", "localhost:8000", "http://", "http://x:99999", "http://[::1"])
def test_an_origin_without_a_usable_host_is_opaque(origin: str) -> None:
    assert _origin_host(origin) is None


def test_a_port_that_is_not_the_schemes_default_is_kept() -> None:
    assert _origin_host("http://x.org:443") == "x.org:443"
    assert _host_key("x.org:443", "http") == "x.org:443"
    assert _host_key("x.org:80", "http") == "x.org"


def scope(method: str = "GET", path: str = "/", **headers: str) -> dict[str, Any]:
    """An HTTP scope; header keyword names use underscores for dashes."""
    return {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "headers": [(k.replace("_", "-").encode(), v.encode("latin-1")) for k, v in headers.items()],
    }


FETCH = {"sec_fetch_site": "cross-site", "sec_fetch_mode": "navigate", "sec_fetch_dest": "document"}


@pytest.mark.parametrize(
    ("request_scope", "why"),
    [
        (scope("GET"), None),  # no metadata, safe method
        (scope("POST"), None),  # curl and scripts send neither header: not a browser
        (scope("POST", sec_fetch_site="same-origin", origin="null"), None),  # Chromium's own form
        (scope("POST", sec_fetch_site="none"), None),  # typed in the address bar
        (scope("GET", **FETCH), None),  # following a shared link
        (scope("HEAD", **FETCH), None),
        (scope("POST", **FETCH), "a cross-site request (Sec-Fetch-Site)"),
        (scope("GET", **{**FETCH, "sec_fetch_dest": "object"}), "a cross-site request (Sec-Fetch-Site)"),
        (scope("GET", **{**FETCH, "sec_fetch_mode": "cors"}), "a cross-site request (Sec-Fetch-Site)"),
        (
            scope("GET", sec_fetch_site="same-site", sec_fetch_mode="cors"),
            "a same-site request (Sec-Fetch-Site)",
        ),
        (scope("POST", origin="null"), "a request from an opaque origin (Origin: null)"),
        (scope("POST", origin="http://127.0.0.1:8000", host="127.0.0.1:8000"), None),
        (
            scope("POST", origin="http://evil.example", host="127.0.0.1:8000"),
            "a request from another origin (http://evil.example)",
        ),
        (
            scope("POST", origin="http://127.0.0.1:8000"),
            "a request from another origin (http://127.0.0.1:8000)",
        ),
        (scope("OPTIONS", origin="http://evil.example", host="127.0.0.1"), None),  # a safe method
    ],
)
def test_cross_site_says_why_a_request_is_another_sites(
    request_scope: dict[str, Any], why: str | None
) -> None:
    assert cross_site(request_scope) == why


# The middleware around a stub app -----------------------------------------------------------------


class Stub:
    """An ASGI app that answers 200 with a fixed body and records the scope and body it got."""

    def __init__(self, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.headers = headers or [(b"content-type", b"text/plain")]
        self.seen: list[dict[str, Any]] = []
        self.body = b""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.seen.append(dict(scope))
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": b"hello"})


def call(guard: Guard, request_scope: dict[str, Any], chunks: tuple[bytes, ...] = (b"",)) -> dict[str, Any]:
    """Run one request through the guard: its status, headers (a dict, plus the list) and body."""
    sent: list[dict[str, Any]] = []
    queue = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(guard(request_scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = [(k.decode(), v.decode()) for k, v in start["headers"]]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return {"status": start["status"], "headers": dict(headers), "header_list": headers, "body": body}


def test_every_answer_carries_the_security_headers_once() -> None:
    stub = Stub()
    got = call(Guard(stub), scope("GET"))
    assert got["status"] == 200 and got["body"] == b"hello"
    for name, value in SECURITY_HEADERS:
        assert got["headers"][name.decode()] == value.decode()
    mine = Stub(headers=[(b"content-security-policy", b"default-src 'none'")])  # a route's own CSP wins
    got = call(Guard(mine), scope("GET"))
    csp = [v for k, v in got["header_list"] if k == "content-security-policy"]
    assert csp == ["default-src 'none'"] and CSP not in csp


def test_head_is_answered_as_get_without_the_body() -> None:
    stub = Stub()
    got = call(Guard(stub), scope("HEAD"))
    assert got["status"] == 200 and got["body"] == b""
    assert stub.seen[0]["method"] == "GET"


def test_a_content_length_that_is_not_a_number_is_refused_unread() -> None:
    stub = Stub()
    got = call(Guard(stub), scope("POST", content_length="12a"))
    assert got["status"] == 400 and stub.seen == []
    assert json.loads(got["body"]) == {"error": "Content-Length is not a number", "field": None}


def test_a_post_without_a_content_type_is_told_what_to_send() -> None:
    guard = Guard(Stub(), json_posts=frozenset({"/api/x"}), form_posts=frozenset({"/"}))
    got = call(guard, scope("POST", "/api/x"))
    assert got["status"] == 415
    assert json.loads(got["body"])["error"] == "send the body as application/json, not nothing"
    got = call(guard, scope("POST", "/", content_type="application/json"))
    assert json.loads(got["body"])["error"] == (
        "send the body as application/x-www-form-urlencoded or multipart/form-data, not application/json"
    )
    # a path no POST handler takes is left to the router (which answers its own 405)
    assert call(guard, scope("POST", "/elsewhere", content_type="text/plain"))["status"] == 200


def test_a_streamed_body_is_cut_off_at_the_limit() -> None:
    """JSON_LIMIT is 262,144 bytes: two chunks of 131,072 pass, a third byte past it does not."""
    stub = Stub()
    half = b"x" * (JSON_LIMIT // 2)
    ok = call(Guard(stub), scope("POST", "/api/x", content_type="application/json"), (half, half))
    assert ok["status"] == 200 and len(stub.body) == JSON_LIMIT
    over = call(Guard(Stub()), scope("POST", "/api/x", content_type="application/json"), (half, half, b"y"))
    assert over["status"] == 413
    assert json.loads(over["body"])["error"] == "request body over 256 KB; refused"


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8000", 200),
        ("LOCALHOST.:8000", 200),  # case and a trailing dot do not matter
        ("[::1]:8000", 200),
        ("", 200),  # no Host: an HTTP/1.0 tool, not a browser being rebound
        ("attacker.example:8000", 400),
    ],
)
def test_allowed_hosts_refuse_any_other_host_name(host: str, status: int) -> None:
    stub = Stub()
    guard = Guard(stub, allowed_hosts=loopback_hosts("127.0.0.1"))
    got = call(guard, scope("GET", host=host) if host else scope("GET"))
    assert got["status"] == status
    if status == 400:
        message = json.loads(got["body"])["error"]
        assert message == "this server answers only to a loopback Host (127.0.0.1, ::1, localhost)"
        assert stub.seen == []


def test_a_cross_site_post_is_refused_before_the_app() -> None:
    stub = Stub()
    got = call(Guard(stub), scope("POST", "/", origin="http://evil.example", host="127.0.0.1:8000"))
    assert got["status"] == 403 and stub.seen == []
    assert json.loads(got["body"])["error"] == (
        "refused: a request from another origin (http://evil.example); use the calculator's own page"
    )
    assert got["headers"]["x-frame-options"] == "DENY"  # refusals carry the headers too


def test_other_scopes_pass_through_untouched() -> None:
    stub = Stub()

    async def nothing() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def drop(message: Any) -> None:
        return None

    asyncio.run(Guard(stub, allowed_hosts=frozenset())({"type": "lifespan"}, nothing, drop))
    assert stub.seen == [{"type": "lifespan"}]
