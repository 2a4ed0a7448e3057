"""Wiring of the gateway: the key cache, the upstream client, the Starlette app, uvicorn.

No database: the gateway talks only NATS (RPCs, chat events, the ``MEM_API_KEYS`` bucket), so
it scales by replicas. Routes: REST ``/v1`` (``routes.py``), ``/v1/chat/completions`` (the
proxy), ``/mcp`` (MCP over streamable HTTP), ``/openapi.json`` and ``/docs``, ``/healthz`` and
``/readyz``, Memory Studio at ``/studio`` (``studio/``). Settings: ``MEMORYD_GATEWAY_*``
(``config.py``); the upstream defaults to ``MEMORYD_LLM_BASE_URL``. The HTTP URL goes into the
ready line as ``http=...``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from typing import Any

from mcp.server.mcpserver import Context
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from shared import __version__
from shared.api_keys import KeyStore, open_bucket
from shared.errors import ConfigError
from shared.service import ServiceContext
from shared.settings.env import load

from .adapters.keys import KeyCache
from .adapters.upstream import Upstream
from .config import GatewayConfig
from .context import Gateway
from .handlers import proxy, rest, special
from .handlers.common import authenticate, json_response, named_owners, problem_response
from .handlers.mcp import build_mcp
from .handlers.trace import TraceContext
from .logic.auth import Unauthorized, acting_owner
from .logic.openapi import document
from .routes import ROUTES
from .studio.endpoints import activity_endpoint, whoami_endpoint
from .studio.web import studio_routes

NEEDS_DB = False
METRICS = ()  # the shared families (RPC, up) only
GATEWAY_ENV_PREFIX = "MEMORYD_GATEWAY_"
ENV = {GATEWAY_ENV_PREFIX: GatewayConfig}

_SPECIAL = {
    "events_publish": special.events_endpoint,
    "export": special.export_endpoint,
    "health": special.health_endpoint,
    "sleep_receipts": special.receipts_endpoint,
    "chat_completions": proxy.chat_endpoint,
    "whoami": whoami_endpoint,
    "activity": activity_endpoint,
}


class _HeaderRequest:
    """Just enough of a request for ``authenticate`` from an MCP tool call's headers."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers
        self.query_params: dict[str, str] = {}


def mcp_owner_of(gw: Gateway) -> Any:
    async def owner_of(ctx: Context) -> str:
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        request: Any = _HeaderRequest(headers)
        key = await authenticate(gw, request)
        owner = acting_owner(key.role, key.owner, named_owners(request), required=True)
        assert owner is not None
        return owner

    return owner_of


def build_app(gw: Gateway) -> Starlette:
    routes: list[BaseRoute] = []
    for route in ROUTES:
        factory = _SPECIAL.get(route.name)
        endpoint = factory(gw) if factory else rest.rpc_endpoint(gw, route)
        routes.append(Route(route.path, endpoint, methods=[route.method], name=route.name))
    openapi = document(ROUTES, version=__version__)
    docs_html = resources.files("services.gateway.assets").joinpath("docs.html").read_text()

    async def openapi_json(request: Request) -> Response:
        return json_response(openapi)

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_html)

    routes += [
        Route("/healthz", special.healthz, methods=["GET"]),
        Route("/readyz", special.Readiness(gw).endpoint, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        *studio_routes(),
    ]
    mcp = build_mcp(gw.call, mcp_owner_of(gw))
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, host=gw.config.host)
    mcp_endpoint = mcp_app.routes[0]
    routes.append(Route("/mcp", _McpGuard(gw, mcp_endpoint), methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(TraceContext)])


class _McpGuard:
    """``/mcp`` with the same API keys: 401 before the MCP transport sees the request (an ASGI app)."""

    def __init__(self, gw: Gateway, inner: Any) -> None:
        self.gw = gw
        self.app = inner.app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await authenticate(self.gw, Request(scope, receive))
        except Unauthorized as exc:
            await problem_response(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def load_settings(env: Mapping[str, str]) -> GatewayConfig:
    """``MEMORYD_GATEWAY_*`` (``ConfigError`` naming a bad one)."""
    return load(GatewayConfig, GATEWAY_ENV_PREFIX, env)


async def setup(ctx: ServiceContext) -> None:
    """Build the gateway and serve HTTP until the service stops."""
    from .server import HttpServer, bind

    config = ctx.own(GatewayConfig).with_llm_defaults(ctx.config.llm)
    try:
        kv = await open_bucket(ctx.js)
    except Exception as exc:
        raise ConfigError("MEMORYD_NATS_URL", f"cannot open the API key bucket: {exc}") from exc
    upstream = Upstream(config.upstream_url, config.upstream_api_key, config.upstream_timeout_s)
    ctx.closers.append(upstream.close)
    gw = Gateway(
        nc=ctx.nc, js=ctx.js, config=config, keys=KeyCache(KeyStore(kv), config.key_cache_s), upstream=upstream
    )
    http = HttpServer(build_app(gw), bind(config.host, config.port))
    await http.start()
    ctx.closers.append(http.stop)
    host = config.host if config.host not in ("0.0.0.0", "::") else "127.0.0.1"
    ctx.ready_fields["http"] = f"http://{host}:{http.port}"
