"""Serving the ASGI app with uvicorn inside a service process.

The service lifecycle (``shared.service``) owns SIGINT/SIGTERM, so uvicorn's own signal capture
is turned off; the socket is bound here so port 0 works and the real port is known at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp

from memoryd.errors import ConfigError


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


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
    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=10)
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
