"""The OpenAI-compatible upstream of the chat proxy, over one pooled ``aiohttp`` session.

aiohttp rather than httpx here: measured on this machine, an upstream call costs about a
quarter of the CPU (the proxy's CPU per call is what bounds its throughput).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from memoryd.errors import DependencyDown


class UpstreamResponse:
    """The upstream's status, headers and body (streamed or read whole); ``aclose`` releases it."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers = response.headers

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.content.iter_any():
            yield chunk

    async def aread(self) -> bytes:
        return await self._response.read()

    async def aclose(self) -> None:
        self._response.release()


class Upstream:
    def __init__(self, default_url: str | None, api_key: str | None, timeout_s: float) -> None:
        self.default_url = default_url.rstrip("/") if default_url else None
        self.api_key = api_key
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:  # created on first use, inside the running loop
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, connector=aiohttp.TCPConnector(limit=512, limit_per_host=0)
            )
        return self._session

    def url(self, base: str | None) -> str:
        root = (base.rstrip("/") if base else None) or self.default_url
        if not root:
            raise DependencyDown("no upstream LLM: set MEMORYD_LLM_BASE_URL or a per-key upstream")
        return f"{root}/chat/completions"

    def headers(self, authorization: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if authorization:
            headers["authorization"] = authorization
        elif self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    async def open(self, url: str, body: bytes, headers: dict[str, str]) -> UpstreamResponse:
        """The upstream's response with its body not read yet: the caller streams or reads it, then closes it."""
        try:
            return UpstreamResponse(await self.session.post(url, data=body, headers=headers))
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise DependencyDown(f"upstream {url} unreachable: {type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
