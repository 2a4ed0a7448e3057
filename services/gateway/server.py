"""Serving the ASGI app with uvicorn inside a service process.

The service lifecycle (``shared.service``) owns SIGINT/SIGTERM, so uvicorn's own signal capture
is turned off; the socket is bound here so port 0 works and the real port is known at once.
Bounds: connections plus running requests (``limit_concurrency``: 503 past it), idle keep-alive,
and a header deadline uvicorn lacks: a connection that has not finished a request's headers
within ``header_timeout_s`` of connecting (or of its last reply) is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from memoryd.errors import ConfigError


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def header_deadline_protocol(timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, closing a connection whose request headers are not in by ``timeout_s``.

    The deadline is armed when the connection opens and when data arrives between requests;
    it is met when uvicorn starts a new request cycle (which it does once the headers are parsed).
    """

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._deadline = self.loop.call_later(timeout_s, self._expire, self.cycle)

        def _expire(self, cycle_then: object) -> None:
            self._deadline = None
            if self.cycle is not cycle_then:  # a new request's headers arrived in time
                return
            if not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so (else Nagle and
    # delayed ACKs add ~40 ms to each small reply)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError("MEMORYD_GATEWAY_PORT", f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class HttpServer:
    def __init__(
        self,
        app: ASGIApp,
        sock: socket.socket,
        *,
        max_connections: int = 1024,
        header_timeout_s: float = 10.0,
        keep_alive_s: int = 5,
    ) -> None:
        config = uvicorn.Config(
            app,
            http=header_deadline_protocol(header_timeout_s),
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=10,
            limit_concurrency=max_connections,
            timeout_keep_alive=keep_alive_s,
            server_header=False,  # names no software (nor, through the proxy, the upstream's)
        )
        self.server = _Server(config)
        self.sock = sock
        self.task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    async def start(self, timeout: float = 10.0) -> None:
        self.task = asyncio.create_task(self.server.serve(sockets=[self.sock]), name="gateway-http")
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.server.started:
            if self.task.done():
                self.task.result()
                raise ConfigError("MEMORYD_GATEWAY_PORT", "the HTTP server stopped while starting")
            if asyncio.get_running_loop().time() > deadline:
                raise ConfigError("MEMORYD_GATEWAY_PORT", "the HTTP server did not start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.server.should_exit = True
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, timeout=15)
        self.sock.close()
