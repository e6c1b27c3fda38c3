"""ASGI middleware at the door: origins, body size limits, content types, security headers.

It runs before routing, so a cross-site, oversized or mistyped request is refused before any
parser touches it:

- A request a browser sends on behalf of another site is refused (403) unless it is a plain
  navigation (following a link to the page is how a scenario is shared). This is the fetch-
  metadata resource-isolation policy: `Sec-Fetch-Site` says who initiated the request, and a
  POST whose `Origin` names another host (browsers that predate fetch metadata) or `null` is
  refused as well. Clients that send neither header (curl, scripts, test clients) are not
  browsers and cannot be used against the person running the server; they are served.
- A declared Content-Length over the limit is answered 413 without reading, and a body that
  streams past the limit (chunked, or lying about its length) is cut off with 413 as soon as
  it crosses it. Only a multipart page form (a config.json upload) may be larger than a JSON
  body; an urlencoded form is held to the JSON limit.
- JSON endpoints accept only `application/json`, which also means a cross-site page cannot
  post to them without a CORS preflight the server never grants.
- `HEAD` is answered as `GET` without the body (same status and headers).

With `allowed_hosts` (what `deepep-calc serve` sets on a loopback bind) a request whose Host
header names anything else is refused: a web page whose domain an attacker re-points at
127.0.0.1 (DNS rebinding) would otherwise count as same-origin and could read the API.
Starlette's `TrustedHostMiddleware` is not used for this: it refuses requests without a Host
header (HTTP/1.0 tools, which cannot be used for rebinding), does not accept a trailing-dot
name, and answers in plain text rather than the `{error, field}` line every refusal here is.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from fastapi.exceptions import HTTPException

from ..catalog.hf import MAX_CONFIG_BYTES

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


def limit_for(path: str, content_type: str = "multipart/form-data") -> int:
    """The body limit: JSON's everywhere, but a multipart page form may carry a config.json."""
    if path.startswith("/api/") or content_type != "multipart/form-data":
        return JSON_LIMIT
    return FORM_LIMIT


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": "80", "https": "443"}


def _origin_host(origin: str) -> str | None:
    """`host[:port]` of an Origin header, lower-case, without a default port; None if opaque."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    try:
        port = parts.port
    except ValueError:
        return None
    if port is not None and str(port) != DEFAULT_PORTS.get(parts.scheme.lower()):
        host += f":{port}"
    return host.lower()


def _host_key(header: str, scheme: str) -> str:
    """A Host header as `_origin_host` spells the same place: lower-case, no default port."""
    text = header.strip().lower()
    default = DEFAULT_PORTS.get(scheme, "")
    if default and text.endswith(f":{default}"):
        text = text[: -len(default) - 1]
    return text


def cross_site(scope: Scope) -> str | None:
    """Why a request counts as sent by another site (None: it does not).

    Fetch metadata first: `Sec-Fetch-Site` same-origin or none (typed in the address bar) is
    ours; cross-site and same-site (another port on localhost is the same site) are refused
    unless they are a plain navigation by GET / HEAD. Without fetch metadata (an older
    browser), a state-changing request whose `Origin` is `null` or names another host than the
    request's is refused. Chromium sends `Origin: null` with `Sec-Fetch-Site: same-origin` for
    the page's own form under `Referrer-Policy: no-referrer`, hence fetch metadata decides first.
    """
    method = scope.get("method", "GET")
    site = _header(scope, b"sec-fetch-site").strip().lower()
    if site:  # the browser says who initiated the request: that is authoritative
        if site in ("same-origin", "none"):
            return None
        mode = _header(scope, b"sec-fetch-mode").strip().lower()
        dest = _header(scope, b"sec-fetch-dest").strip().lower()
        if method in ("GET", "HEAD") and mode == "navigate" and dest not in ("object", "embed"):
            return None
        return f"a {site} request (Sec-Fetch-Site)"
    if method in SAFE_METHODS:
        return None
    # A browser without fetch metadata: its Origin must be this server. (Under the pages'
    # no-referrer policy such a browser sends `Origin: null` for the page's own form, which
    # cannot be told from a sandboxed attacker; it is refused, and the page's fetch() calls,
    # which carry the real origin, still work.)
    origin = _header(scope, b"origin")
    if not origin:
        return None
    if origin.strip().lower() == "null":
        return "a request from an opaque origin (Origin: null)"
    host = _header(scope, b"host")
    scheme = str(scope.get("scheme", "http"))
    if not host or _origin_host(origin) != _host_key(host, scheme):
        return f"a request from another origin ({origin.strip()[:100]})"
    return None


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

    def _refusal(self, scope: Scope, ctype: str, limit: int) -> tuple[int, str] | None:
        """(status, message) of the first rule the request breaks before any body is read:
        its Host, its origin, its declared length, its content type; None when it passes."""
        if self.allowed_hosts is not None:
            # No Host at all is an HTTP/1.0 tool, never a browser: rebinding needs a browser.
            host = _header(scope, b"host")
            if host and host_name(host) not in self.allowed_hosts:
                names = ", ".join(sorted(self.allowed_hosts))
                return 400, f"this server answers only to a loopback Host ({names})"
        why = cross_site(scope)
        if why is not None:
            return 403, f"refused: {why}; use the calculator's own page"
        declared = _header(scope, b"content-length")
        if declared:
            if not declared.isdigit():
                return 400, "Content-Length is not a number"
            if int(declared) > limit:
                return 413, _too_large(limit)
        path = scope.get("path", "")
        if scope.get("method") == "POST" and (path in self.json_posts or path in self.form_posts):
            wanted = ("application/json",) if path in self.json_posts else FORM_TYPES
            if ctype not in wanted:
                return 415, f"send the body as {' or '.join(wanted)}, not {ctype or 'nothing'}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctype = _header(scope, b"content-type").split(";", 1)[0].strip().lower()
        limit = limit_for(scope.get("path", ""), ctype)
        refusal = self._refusal(scope, ctype, limit)
        if refusal is not None:
            await _refuse(send, *refusal)
            return
        head = scope.get("method") == "HEAD"
        if head:  # answered as GET, without the body
            scope = {**scope, "method": "GET"}
        await self._serve(scope, receive, send, limit, head)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, limit: int, head: bool) -> None:
        """The app behind the door: a body cut off at `limit`, the security headers added to
        every response, and a HEAD answered without its body."""
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
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except TooLarge:
            if not started:
                await _refuse(send, 413, _too_large(limit))
