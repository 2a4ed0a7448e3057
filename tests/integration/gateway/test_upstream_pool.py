"""The proxy's upstream pool is bounded and so is the wait for it: with every connection held by
a stream nobody finishes, the next call fails fast (502 material), and a released connection
serves again. A real HTTP server on 127.0.0.1; no stack needed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from memoryd.errors import DependencyDown
from services.gateway.adapters.upstream import Upstream

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def endless() -> AsyncIterator[str]:
    """An upstream whose streamed answer never ends."""

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        while True:
            await response.write(b": still thinking\n\n")
            await asyncio.sleep(0.1)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.shutdown()
        await runner.cleanup()


async def test_a_full_pool_fails_fast_and_a_released_connection_serves_again(endless: str) -> None:
    upstream = Upstream(endless, None, 30.0, connections=1, acquire_s=0.5)
    url = upstream.url(None)
    try:
        held = await upstream.open(url, b"{}", upstream.headers(None))
        assert held.status_code == 200
        started = time.monotonic()
        with pytest.raises(DependencyDown) as err:
            await upstream.open(url, b"{}", upstream.headers(None))
        assert time.monotonic() - started < 3.0
        assert "timed out" in err.value.description and "127.0.0.1" not in err.value.description
        await held.aclose()
        again = await upstream.open(url, b"{}", upstream.headers(None))
        assert again.status_code == 200
        await again.aclose()
    finally:
        await upstream.close()
