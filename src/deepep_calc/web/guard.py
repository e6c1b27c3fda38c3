"""ASGI middleware at the door: body size limits, content types, and security headers.

It runs before routing, so an oversized or mistyped request is refused before any parser
touches it: a declared Content-Length over the limit is answered 413 without reading, and a
body that streams past the limit (chunked, or lying about its length) is cut off with 413 as
soon as it crosses it. JSON endpoints accept only `application/json`, which also means a
cross-site page cannot post to them without a CORS preflight the server never grants.

With `allowed_hosts` (what `deepep-calc serve` sets on a loopback bind) a request whose Host
header names anything else is refused: a web page whose domain an attacker re-points at
127.0.0.1 (DNS rebinding) would otherwise count as same-origin and could read the API.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.exceptions import HTTPException

from ..catalog.hf_config import MAX_CONFIG_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON_LIMIT = 256 * 1024
# A config.json upload may be up to 5 MB (the CLI's limit); the form around it adds a little.
FORM_LIMIT = MAX_CONFIG_BYTES + 64 * 1024

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

# Everything the pages load comes from this server; plotly needs inline styles.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class TooLarge(HTTPException):
    """The body crossed the limit while streaming.

    An HTTPException, so FastAPI's body reader passes it on untouched (it turns any other
    error into a 400) and the app's handler answers 413.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def loopback_hosts(bound: str) -> frozenset[str]:
    """Host names a loopback-bound server answers to: the usual ones and the address it is bound to."""
    return LOOPBACK_NAMES | {bound.strip().strip("[]").lower()}


def host_name(header: str) -> str:
    """The name in a Host header, lower-case, without the port, IPv6 brackets or a trailing dot."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.rstrip(".")


def limit_for(path: str) -> int:
    return JSON_LIMIT if path.startswith("/api/") else FORM_LIMIT


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "field": None}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _too_large(limit: int) -> str:
    return f"request body over {limit // 1024:,} KB; refused"


class Guard:
    """`json_posts` / `form_posts`: the paths whose POST handlers take that kind of body (other
    paths are left to the router, so a wrong method still gets its 405). `allowed_hosts`: the
    Host names served (None: any, as on a deliberate non-loopback bind or under a test client)."""

    def __init__(
        self,
        app: ASGIApp,
        json_posts: frozenset[str] = frozenset(),
        form_posts: frozenset[str] = frozenset(),
        allowed_hosts: frozenset[str] | None = None,
    ) -> None:
        self.app = app
        self.json_posts = json_posts
        self.form_posts = form_posts
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.allowed_hosts is not None:
            # No Host at all is an HTTP/1.0 tool, never a browser: rebinding needs a browser.
            host = _header(scope, b"host")
            if host and host_name(host) not in self.allowed_hosts:
                names = ", ".join(sorted(self.allowed_hosts))
                await _refuse(send, 400, f"this server answers only to a loopback Host ({names})")
                return
        path = scope.get("path", "")
        limit = limit_for(path)
        declared = _header(scope, b"content-length")
        if declared:
            if not declared.isdigit():
                await _refuse(send, 400, "Content-Length is not a number")
                return
            if int(declared) > limit:
                await _refuse(send, 413, _too_large(limit))
                return
        if scope.get("method") == "POST" and (path in self.json_posts or path in self.form_posts):
            ctype = _header(scope, b"content-type").split(";", 1)[0].strip().lower()
            wanted = ("application/json",) if path in self.json_posts else FORM_TYPES
            if ctype not in wanted:
                await _refuse(send, 415, f"send the body as {' or '.join(wanted)}, not {ctype or 'nothing'}")
                return

        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise TooLarge(limit)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except TooLarge:
            if not started:
                await _refuse(send, 413, _too_large(limit))
