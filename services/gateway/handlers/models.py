"""``GET /v1/models``: the upstream's model list, passed through (chat UIs ask for it first).

The key decides the upstream (its own, else the gateway's) and the forwarded credential, as on
the proxy; no memory is involved. The answer keeps the upstream's status and body and only its
allow-listed headers.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memoryd.errors import DependencyDown

from ..context import Gateway
from .common import Endpoint, authenticate, openai_guarded
from .proxy import open_upstream, read_through, unreachable

MODELS_PATH = "models"


def models_endpoint(gw: Gateway) -> Endpoint:
    @openai_guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        try:
            upstream = await open_upstream(gw, key, request, MODELS_PATH, None)
        except DependencyDown as exc:
            return unreachable(exc)
        return await read_through(upstream)

    return endpoint
