"""``/mcp`` as an ASGI app that builds the MCP server on the first authenticated request.

The MCP SDK (with pydantic and its JSON-schema machinery) costs ~27 MB of resident memory at
import (gateway imports: 101 MB with it, 74 MB without, measured). A gateway that serves only
REST and the chat proxy never pays for it: the SDK is imported, the server built and its
session manager started when the first request with a valid API key reaches ``/mcp``; an
unauthenticated request is answered 401 before anything loads. The session manager runs in
a task of its own (an anyio task group must be left by the task that entered it) until
``aclose``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from memoryd.errors import TooLarge

from ..context import Gateway
from ..logic.auth import Unauthorized, acting_owner
from .common import authenticate, named_owners, problem_response, read_body

Asgi = Callable[[Any, Any, Any], Awaitable[None]]


class _HeaderRequest:
    """Just enough of a request for ``authenticate`` from an MCP tool call's headers."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers
        self.query_params: dict[str, str] = {}


def mcp_owner_of(gw: Gateway) -> Callable[[Any], Awaitable[str]]:
    """The owner an MCP tool call acts for, from the API key of its HTTP request."""

    async def owner_of(ctx: Any) -> str:
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        request: Any = _HeaderRequest(headers)
        key = await authenticate(gw, request)
        owner = acting_owner(key.role, key.owner, named_owners(request), required=True)
        assert owner is not None
        return owner

    return owner_of


def _replay(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that gives ``body`` once, then what the connection sends (its disconnect)."""
    given = False

    async def replay() -> Any:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class LazyMcp:
    """The ``/mcp`` endpoint: API key checked first, the MCP transport built on first use."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._inner: Asgi | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._serving: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await authenticate(self.gw, Request(scope, receive))
        except Unauthorized as exc:
            await problem_response(exc)(scope, receive, send)
            return
        if scope.get("method") == "POST":  # the body under the gateway's limit, as on every route
            try:
                body = await read_body(self.gw, Request(scope, receive))
            except TooLarge as exc:
                await problem_response(exc)(scope, receive, send)
                return
            receive = _replay(body, receive)
        inner = self._inner or await self._start()
        await inner(scope, receive, send)

    async def _start(self) -> Asgi:
        async with self._lock:
            if self._inner is not None:
                return self._inner
            from .mcp import build_mcp  # the SDK loads here, once

            mcp = build_mcp(self.gw.call, mcp_owner_of(self.gw))
            app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, host=self.gw.config.host)
            running = asyncio.Event()

            async def serve() -> None:
                async with mcp.session_manager.run():
                    running.set()
                    await self._stop.wait()

            self._serving = asyncio.create_task(serve(), name="mcp-session-manager")
            started = asyncio.create_task(running.wait())
            await asyncio.wait({self._serving, started}, return_when=asyncio.FIRST_COMPLETED)
            if not running.is_set():  # the session manager failed to start: say why, try again next time
                started.cancel()
                self._serving.result()
            self._inner = app.routes[0].app  # type: ignore[attr-defined]
            return self._inner

    async def aclose(self) -> None:
        """Stop the session manager, if it was started."""
        self._stop.set()
        if self._serving is not None:
            await self._serving
