"""`create_app()` (`web/app.py`): which routes it serves and guards, how errors leave it (a JSON
`{error, field}` line, an HTML page for a browser off the API, a 500 without details) and that
Swagger's CDN-loaded docs are off."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from deepep_calc.base.version import __version__
from deepep_calc.web.app import _escape, create_app
from deepep_calc.web.guard import SECURITY_HEADERS
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import clean, error_of, post


def test_unexpected_errors_are_500_without_details(client, monkeypatch):  # noqa: F811
    from deepep_calc.web import api

    def boom(*_a, **_k):
        raise RuntimeError("secret internals /srv/x.py line 7")

    monkeypatch.setattr(api, "run", boom)
    api.clear_caches()
    resp = post(client, "/api/evaluate", {"nodes": 3})
    body = error_of(resp, 500)
    assert "secret" not in resp.text
    assert body["error"].startswith("internal error")
    api.clear_caches()


def test_unknown_route_is_a_json_404(client):  # noqa: F811
    body = error_of(clean(client.get("/api/nothing")), 404)
    assert "/api/nothing" in body["error"]


def test_openapi_documents_the_api_and_no_cdn_docs(client):  # noqa: F811
    spec = clean(client.get("/openapi.json")).json()
    assert {"/api/evaluate", "/api/models", "/api/instances", "/api/transports", "/api/kernel"} <= set(
        spec["paths"]
    )
    schemas = spec["components"]["schemas"]
    body = schemas["EvaluateRequest"]["properties"]
    for name in (
        "model",
        "instance",
        "nodes",
        "gpus_per_node",
        "engine",
        "eager",
        "cuda_graphs",
        "transport",
    ):
        assert name in body
    assert "config_json" in body
    assert "EvaluateResponse" in schemas
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN


def test_wrong_method_is_405_with_allow(client):  # noqa: F811
    resp = clean(client.post("/api/models", content=b"x", headers={"content-type": "text/plain"}))
    assert error_of(resp, 405)["field"] is None
    assert resp.headers["allow"] == "GET"


def test_a_500_carries_the_security_headers(client, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The 500 handler runs outside the guard, so it adds the headers itself."""
    from deepep_calc.web import api

    def boom(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "run", boom)
    api.clear_caches()
    try:
        resp = client.post("/api/evaluate", json={"nodes": 5})
    finally:
        api.clear_caches()
    assert resp.status_code == 500
    for name, value in SECURITY_HEADERS:
        assert resp.headers[name.decode()] == value.decode()


def test_a_browser_off_the_api_gets_an_html_error_page(client) -> None:  # noqa: F811
    resp = clean(client.get("/nothing/<b>", headers={"accept": "text/html"}))
    assert resp.status_code == 404 and resp.headers["content-type"].startswith("text/html")
    assert "<p>404: no page or endpoint at /nothing/&lt;b&gt;</p>" in resp.text  # the path escaped
    assert "<a href='/'>Back to the calculator</a>" in resp.text
    api = client.get("/api/nothing", headers={"accept": "text/html"})  # the API answers JSON regardless
    assert api.headers["content-type"] == "application/json"
    assert error_of(api, 404)["error"] == "no page or endpoint at /api/nothing"


def test_escape_turns_the_three_markup_characters_into_entities() -> None:
    """`&` first, or the `&` of `&lt;` would be escaped again."""
    assert _escape("<a>&amp;</a>") == "&lt;a&gt;&amp;amp;&lt;/a&gt;"
    assert _escape('it\'s "fine"') == 'it\'s "fine"'  # quotes stay: the text sits between tags


def test_the_guard_knows_every_post_route_and_its_body_kind(app) -> None:  # noqa: F811
    """The JSON posts are the API's POST routes, the form post the calculator page's."""
    (guard,) = [m for m in app.user_middleware if m.cls.__name__ == "Guard"]
    assert guard.kwargs["json_posts"] == {"/api/evaluate", "/api/details", "/api/kernel", "/api/plan"}
    assert guard.kwargs["form_posts"] == {"/"}
    assert guard.kwargs["allowed_hosts"] is None  # a test client or a deliberate public bind


def test_allowed_hosts_are_compared_lower_case() -> None:
    with TestClient(create_app(allowed_hosts=["LocalHost"]), base_url="http://localhost:8000") as local:
        assert local.get("/api/models").status_code == 200
        refused = local.get("/api/models", headers={"host": "evil.example"})
    assert error_of(refused, 400)["error"] == "this server answers only to a loopback Host (localhost)"


def test_openapi_states_the_version_and_the_error_shape(client) -> None:  # noqa: F811
    spec = client.get("/openapi.json").json()
    assert spec["info"]["title"] == "deepep-calc" and spec["info"]["version"] == __version__
    assert "{error, field}" in spec["info"]["description"]
    assert client.get("/redoc").status_code == 404  # ReDoc also loads from a CDN
    assert post(client, "/api/evaluate", {}).status_code == 200  # and the API itself is mounted
