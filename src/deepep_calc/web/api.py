"""The JSON API: the CLI's commands over HTTP, with the CLI's JSON and the CLI's error lines.

`/api/evaluate` answers exactly what `deepep-calc evaluate --json` prints for the same
scenario. Results are cached by scenario (the catalogs do not change while the server runs,
and an inline config.json is part of the key), because a page sends the same scenario many
times while someone edits a field and the model takes milliseconds per pass.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import orjson
from fastapi import APIRouter
from fastapi.responses import Response

from ..estimate.result import Result
from ..report.view import page_details
from .inputs import cache_key, run
from .schemas import (
    DetailsResponse,
    ErrorOut,
    EvaluateRequest,
    EvaluateResponse,
    InstanceRow,
    KernelRequest,
    KernelResponse,
    ModelRow,
    TransportRow,
)

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "body could not be read"},
    403: {"model": ErrorOut, "description": "sent by a page of another site (Origin / Sec-Fetch-Site)"},
    413: {"model": ErrorOut, "description": "request body over the size limit"},
    415: {"model": ErrorOut, "description": "body is not application/json"},
    422: {"model": ErrorOut, "description": "an input cannot be used; `field` names it"},
}

router = APIRouter(prefix="/api", tags=["api"])
V = TypeVar("V")


class LRU(Generic[V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._data: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: str, make: Callable[[], V]) -> V:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = make()
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


# Serialised responses, and the few latest Result objects (the page asks for a scenario's
# numbers and its charts at the same moment: the model runs once for both).
EVALUATIONS: LRU[bytes] = LRU()
DETAILS: LRU[bytes] = LRU(128)
RESULTS: LRU[Result] = LRU(32)


def result_for(req: EvaluateRequest, key: str | None = None) -> Result:
    """The Result of a request; `key`, its `cache_key` when the caller has it already (one
    digest per request: the key is a JSON dump and a SHA-256, a tenth of a cached answer)."""
    return RESULTS.get_or_make(key if key is not None else cache_key(req), lambda: run(req))


def clear_caches() -> None:
    for cache in (EVALUATIONS, DETAILS, RESULTS):
        cache.clear()


def dumps(obj: Any) -> bytes:
    """Compact JSON. orjson (a tenth of the stdlib's time here) writes the same document; NaN
    never reaches it, since `Q.to_json` already turns non-finite values into null."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def _json(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")


def evaluate_json(req: EvaluateRequest) -> bytes:
    key = cache_key(req)
    return EVALUATIONS.get_or_make(key, lambda: dumps(result_for(req, key).to_json()))


def details_of(result: Any) -> dict[str, Any]:
    """What the page draws beside the numbers; a model uploaded to the page has no CLI name."""
    from .inputs import UPLOAD_PREFIX

    return page_details(result, uploaded=result.scenario.model.startswith(UPLOAD_PREFIX))


@router.post(
    "/evaluate",
    summary="Verdict and arms for one scenario (the CLI's `evaluate --json`)",
    responses={200: {"model": EvaluateResponse}, **ERRORS},
    response_class=Response,
)
async def api_evaluate(body: EvaluateRequest) -> Response:
    return _json(evaluate_json(body))


@router.post(
    "/details",
    summary="What the page draws beside the numbers: model evaluated, charts, provenance",
    responses={200: {"model": DetailsResponse}, **ERRORS},
    response_class=Response,
)
async def api_details(body: EvaluateRequest) -> Response:
    key = cache_key(body)
    return _json(DETAILS.get_or_make(key, lambda: dumps(details_of(result_for(body, key)))))


@router.post(
    "/kernel",
    summary="Dispatch + combine latency of one MoE layer (the CLI's `kernel --json`)",
    responses={200: {"model": KernelResponse}, **ERRORS},
    response_class=Response,
)
async def api_kernel(body: KernelRequest) -> Response:
    from ..estimate.kernel import kernel_json, kernel_query

    return _json(dumps(kernel_json(kernel_query(**body.model_dump()))))


@router.get("/models", summary="Model presets", response_model=list[ModelRow])
async def api_models() -> Response:
    from ..report.catalogs import models_rows

    return _json(dumps(models_rows()))


@router.get("/instances", summary="Instance catalog", response_model=list[InstanceRow])
async def api_instances() -> Response:
    from ..report.catalogs import instances_rows

    return _json(dumps(instances_rows()))


@router.get("/transports", summary="DeepEP transports", response_model=list[TransportRow])
async def api_transports() -> Response:
    from ..report.catalogs import transports_rows

    return _json(dumps(transports_rows()))
