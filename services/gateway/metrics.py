"""The gateway's HTTP metrics: every request by route template and status, and the chat proxy's
upstream and memory outcome (``shared.observability.metrics`` defines the families).

``HttpMetrics`` is ASGI middleware: it labels a request by its route template
(``/v1/memories/{id}``, never the raw path, so ids never become series; ``unmatched`` for a
path no route knows) and counts the memory outcome a proxied call reports in its
``x-memory-status`` header; methods beyond the standard ones count as ``other``, so a client
cannot grow the series. ``MeteredUpstream`` times the upstream LLM up to its response headers.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.errors import DependencyDown
from shared.observability.metrics import HTTP_REQUESTS, HTTP_SECONDS, PROXY_MEMORY, PROXY_UPSTREAM_SECONDS

from .adapters.upstream import Upstream, UpstreamResponse

MEMORY_STATUS = b"x-memory-status"
MEMORY_OUTCOMES = frozenset({"injected", "none", "skipped", "unavailable", "rate_limited", "failed"})
UNMATCHED = "unmatched"
#: any other method a client sends is counted as ``other`` (a label value per made-up method would not be bounded)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(scope: Scope) -> str:
    """The template of the route that took the request (``/v1/memories/{id}``), else ``unmatched``."""
    return str(getattr(scope.get("route"), "path", None) or UNMATCHED)


def memory_outcome(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The ``x-memory-status`` of a response, when it is one of the known outcomes."""
    for name, value in headers:
        if name.lower() == MEMORY_STATUS:
            outcome = value.decode("latin-1")
            return outcome if outcome in MEMORY_OUTCOMES else None
    return None


class HttpMetrics:
    """ASGI middleware: one count and one duration per HTTP request (until its last byte)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before it responds
        outcome: str | None = None

        async def observe(message: Message) -> None:
            nonlocal status, outcome
            if message["type"] == "http.response.start":
                status = int(message["status"])
                outcome = memory_outcome(list(message.get("headers", [])))
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            method = scope["method"] if scope["method"] in METHODS else "other"
            labels = (route_template(scope), method, str(status))
            HTTP_REQUESTS.labels(*labels).inc()
            HTTP_SECONDS.labels(*labels).observe(time.perf_counter() - started)
            if outcome is not None:
                PROXY_MEMORY.labels(outcome).inc()


class MeteredUpstream(Upstream):
    """The upstream LLM, timed up to its response headers by status (``unreachable``: no answer)."""

    async def open(self, url: str, body: bytes | None, headers: dict[str, str]) -> UpstreamResponse:
        started = time.perf_counter()
        try:
            response = await super().open(url, body, headers)
        except DependencyDown:
            PROXY_UPSTREAM_SECONDS.labels("unreachable").observe(time.perf_counter() - started)
            raise
        PROXY_UPSTREAM_SECONDS.labels(str(response.status_code)).observe(time.perf_counter() - started)
        return response
