"""Wiring of the gateway: the key cache, the upstream client, the Starlette app, uvicorn.

No database: the gateway talks only NATS (RPCs, chat events, the ``MEM_API_KEYS`` bucket, the
per-key limit state in ``MEM_KEY_LIMITS``), so it scales by replicas and the limits hold across
them. Routes: REST ``/v1`` (``routes.py``), the proxy's ``/v1/chat/completions``,
``/v1/responses`` and ``/v1/models``, ``/mcp`` (MCP over streamable HTTP, loaded on first use:
``handlers/mcp_mount.py``), ``/openapi.json`` and ``/docs``, the probes ``/livez``, ``/readyz``
and ``/healthz`` (``handlers/probes.py``), Memory Studio at ``/studio`` (``studio/``).
Settings: ``MEMORYD_GATEWAY_*`` (``config.py``); the upstream defaults to ``MEMORYD_LLM_BASE_URL``.
The HTTP URL goes into the ready line as ``http=...``. Every request is counted by route
template and status (``metrics.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from importlib.metadata import version

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from memoryd.errors import ConfigError
from shared.api_keys import KeyStore, open_bucket
from shared.observability.metrics import GATEWAY
from shared.service import ServiceContext
from shared.settings.env import load

from .adapters.keys import KeyCache
from .adapters.limits_kv import LimitStore, open_limits_bucket
from .config import GatewayConfig
from .context import Gateway
from .handlers import models, proxy, responses, rest, special
from .handlers.common import json_response
from .handlers.mcp_mount import LazyMcp
from .handlers.probes import Probes, healthz
from .handlers.trace import TraceContext
from .logic.openapi import document
from .metrics import HttpMetrics, MeteredUpstream
from .routes import ROUTES
from .studio import history as activity_history
from .studio.endpoints import (
    activity_endpoint,
    embedding_models_endpoint,
    history_endpoint,
    sample,
    whoami_endpoint,
)
from .studio.web import studio_routes

NEEDS_DB = False
METRICS = GATEWAY  # HTTP requests, the proxy's upstream and memory outcomes
GATEWAY_ENV_PREFIX = "MEMORYD_GATEWAY_"
ENV = {GATEWAY_ENV_PREFIX: GatewayConfig}

_SPECIAL = {
    "events_publish": special.events_endpoint,
    "export": special.export_endpoint,
    "health": special.health_endpoint,
    "sleep_receipts": special.receipts_endpoint,
    "chat_completions": proxy.chat_endpoint,
    "responses": responses.responses_endpoint,
    "models_list": models.models_endpoint,
    "whoami": whoami_endpoint,
    "activity": activity_endpoint,
    "embedding_models": embedding_models_endpoint,
}


def build_app(gw: Gateway, probes: Probes, history: activity_history.History) -> Starlette:
    routes: list[BaseRoute] = []
    special = {**_SPECIAL, "activity_history": history_endpoint(history)}
    for route in ROUTES:
        factory = special.get(route.name)
        endpoint = factory(gw) if factory else rest.rpc_endpoint(gw, route)
        routes.append(Route(route.path, endpoint, methods=[route.method], name=route.name))
    openapi = document(ROUTES, version=version("memoryd"))
    docs_html = resources.files("services.gateway.assets").joinpath("docs.html").read_text()

    async def openapi_json(request: Request) -> Response:
        return json_response(openapi)

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_html)

    routes += [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", probes.readyz, methods=["GET"]),
        Route("/livez", probes.livez, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        *studio_routes(),
    ]
    mcp = LazyMcp(gw)
    routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await mcp.aclose()

    middleware = [Middleware(HttpMetrics), Middleware(TraceContext)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def load_settings(env: Mapping[str, str]) -> GatewayConfig:
    """``MEMORYD_GATEWAY_*`` (``ConfigError`` naming a bad one)."""
    return load(GatewayConfig, GATEWAY_ENV_PREFIX, env)


async def setup(ctx: ServiceContext) -> None:
    """Build the gateway and serve HTTP until the service stops."""
    from .server import HttpServer, bind

    config = ctx.own(GatewayConfig).with_llm_defaults(ctx.config.llm)
    try:
        kv = await open_bucket(ctx.js)
        limits_kv = await open_limits_bucket(ctx.js)
    except Exception as exc:
        raise ConfigError("MEMORYD_NATS_URL", f"cannot open the API key or key limits bucket: {exc}") from exc
    upstream = MeteredUpstream(
        config.upstream_url,
        config.upstream_api_key,
        config.upstream_timeout_s,
        connections=config.upstream_connections,
        acquire_s=config.upstream_acquire_s,
    )
    ctx.closers.append(upstream.close)
    gw = Gateway(
        nc=ctx.nc,
        js=ctx.js,
        config=config,
        keys=KeyCache(KeyStore(kv), config.key_cache_s),
        upstream=upstream,
        limits=LimitStore(limits_kv),
    )
    probes = Probes(gw, ctx.liveness, ctx.stop)
    history = activity_history.History(config.activity_history_s)
    ctx.spawn(activity_history.keep(history, lambda: sample(gw), ctx.stop), "gateway-activity-history")
    http = HttpServer(
        build_app(gw, probes, history),
        bind(config.host, config.port),
        max_connections=config.max_connections,
        header_timeout_s=config.header_timeout_s,
        keep_alive_s=config.keep_alive_s,
    )
    await http.start()
    ctx.closers.append(http.stop)
    host = config.host if config.host not in ("0.0.0.0", "::") else "127.0.0.1"
    ctx.ready_fields["http"] = f"http://{host}:{http.port}"
