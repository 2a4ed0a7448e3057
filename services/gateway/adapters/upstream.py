"""The OpenAI-compatible upstream of the chat proxy, over one pooled ``aiohttp`` session.

aiohttp rather than httpx here: measured on this machine, an upstream call costs about a
quarter of the CPU (the proxy's CPU per call is what bounds its throughput). The pool is
bounded (``connections``) and so is the wait for one of its connections (``acquire_s``), so
slow or unread streams cannot hold every call up. The gateway's own API key goes only to the
gateway's upstream; a key's own upstream gets the caller's credential or none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from memoryd.errors import DependencyDown
from shared.observability.logging import get_logger

log = get_logger(__name__)


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
    def __init__(
        self,
        default_url: str | None,
        api_key: str | None,
        timeout_s: float,
        *,
        connections: int = 256,
        acquire_s: float = 10.0,
    ) -> None:
        self.default_url = default_url.rstrip("/") if default_url else None
        self.api_key = api_key
        self.connections = connections
        # connect: waiting for a pooled connection plus connecting; sock_read: between bytes
        self.timeout = aiohttp.ClientTimeout(total=None, connect=acquire_s, sock_connect=acquire_s, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:  # created on first use, inside the running loop
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, connector=aiohttp.TCPConnector(limit=self.connections, limit_per_host=0)
            )
        return self._session

    def url(self, base: str | None, path: str = "chat/completions") -> str:
        """``path`` under the key's upstream (``base``), else under the gateway's."""
        root = (base.rstrip("/") if base else None) or self.default_url
        if not root:
            raise DependencyDown("no upstream LLM: set MEMORYD_LLM_BASE_URL or a per-key upstream")
        return f"{root}/{path}"

    def headers(self, authorization: str | None, *, own_upstream: bool = False) -> dict[str, str]:
        """The forwarded headers: the caller's upstream credential, else (the gateway's upstream only) its key."""
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if authorization:
            headers["authorization"] = authorization
        elif self.api_key and not own_upstream:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    async def open(self, url: str, body: bytes | None, headers: dict[str, str]) -> UpstreamResponse:
        """The upstream's response with its body not read yet: the caller streams or reads it, then closes it.

        A ``body`` is POSTed; without one it is a GET (``/models``).

        ``DependencyDown`` when it cannot be reached; its description names no address (the
        caller sees it), the log has the full error.
        """
        try:
            method = "GET" if body is None else "POST"
            return UpstreamResponse(await self.session.request(method, url, data=body, headers=headers))
        except (TimeoutError, aiohttp.ClientError) as exc:
            log.warning("proxy.upstream_unreachable", url=url, error=f"{type(exc).__name__}: {exc}")
            what = "timed out (connecting, or waiting for a free connection)" if isinstance(exc, TimeoutError) else ""
            raise DependencyDown(f"the upstream LLM is unreachable: {what or type(exc).__name__}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
