"""The gateway's first hop of a trace: one server span per HTTP request (ASGI middleware).

An incoming W3C ``traceparent``/``tracestate`` header makes the span a child of the caller's
trace (a browser, an application, a proxy in front); every RPC and chat event the request
leads to carries the span's context on in its NATS headers (``memoryd.tracing``).
The span is named by the route template (``POST /v1/search``, ``GET /v1/memories/{id}``), never
the raw path, so ids do not become span names.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd import tracing

_WANTED = (tracing.TRACEPARENT.encode(), tracing.TRACESTATE.encode())


class TraceContext:
    """ASGI middleware: run each HTTP request inside a server span continuing its ``traceparent``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in _WANTED}
        method = scope["method"]
        attributes = {"http.request.method": method, "url.path": scope["path"]}
        with tracing.span(method, tracing.SpanKind.SERVER, headers=headers, attributes=attributes) as span:

            async def send_status(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        tracing.mark_error(f"HTTP {status}", span)
                await send(message)

            try:
                await self.app(scope, receive, send_status)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
