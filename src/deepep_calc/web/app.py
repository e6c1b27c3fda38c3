"""`create_app()`: the FastAPI application behind `deepep-calc serve`.

Errors leave the server the way they leave the CLI: a `CalcError` becomes 422 with the
CLI's one-line message (JSON field names in place of flags) and the input it names;
anything unexpected becomes a 500 with a generic line (the traceback goes to the server log,
never into a response). Swagger and ReDoc are off because they load their assets from a CDN;
the spec is at `/openapi.json`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..base.errors import CalcError
from . import api, pages, plan_routes
from .guard import SECURITY_HEADERS, Guard
from .inputs import api_message, from_validation, input_name

log = logging.getLogger("deepep_calc.web")

DESCRIPTION = (
    "DeepEP all-to-all or a dense alternative on AWS EFA: the calculator's model over HTTP. "
    "`POST /api/evaluate` takes the CLI's scenario flags in snake_case and returns exactly what "
    "`deepep-calc evaluate --json` prints. Errors are `{error, field}`: the CLI's one-line message, "
    "naming JSON fields."
)


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "field": field}, status_code=status)


def _wants_html(request: Request) -> bool:
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get("accept", "")


async def on_calc_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CalcError)
    return _error(422, api_message(exc), input_name(exc))


async def on_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError | ValidationError)
    err = from_validation(exc)
    return _error(422, api_message(err), input_name(err))


async def on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    message = str(exc.detail) if exc.detail else "request refused"
    if exc.status_code == 404:
        message = f"no page or endpoint at {request.url.path}"
    if _wants_html(request):
        body = (
            "<!doctype html><meta charset='utf-8'><title>deepep-calc</title>"
            f"<p>{exc.status_code}: {_escape(message)}</p><p><a href='/'>Back to the calculator</a></p>"
        )
        return HTMLResponse(body, status_code=exc.status_code, headers=exc.headers)
    response = _error(exc.status_code, message)
    response.headers.update(exc.headers or {})  # e.g. Allow on a 405
    return response


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    response = _error(500, "internal error: the server log has the details")
    # This handler runs outside the guard (Starlette calls it from its outermost layer), so
    # the security headers are added here.
    response.headers.update({k.decode(): v.decode() for k, v in SECURITY_HEADERS})
    return response


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def create_app(allowed_hosts: Iterable[str] | None = None) -> Any:
    """The app, wrapped in the size / content-type guard (an ASGI callable uvicorn can serve).

    `allowed_hosts`: the Host header names to answer (`serve` passes the loopback names on a
    loopback bind); None answers any, which is what test clients and a deliberate public bind need.
    """
    from ..base.version import __version__

    app = FastAPI(
        title="deepep-calc",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.include_router(api.router)
    app.include_router(plan_routes.api_router)
    app.include_router(pages.router)
    app.include_router(plan_routes.page_router)
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    app.add_exception_handler(CalcError, on_calc_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
    routes = [  # their own paths (prefix included)
        *api.router.routes,
        *plan_routes.api_router.routes,
        *pages.router.routes,
        *plan_routes.page_router.routes,
    ]
    posts = {r.path for r in routes if isinstance(r, APIRoute) and "POST" in r.methods}
    app.add_middleware(
        Guard,
        json_posts=frozenset(p for p in posts if p.startswith("/api/")),
        form_posts=frozenset(p for p in posts if not p.startswith("/api/")),
        allowed_hosts=None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts),
    )
    return app
